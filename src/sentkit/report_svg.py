"""Inline SVG figures for the HTML report, drawn by hand so the page needs no script library or image
files: a labelled heatmap, a scatter on its own axes, and line charts."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from html import escape

# viridis at 0, .25, .5, .75, 1: a colour scale readable in grey and by colour-blind readers
_VIRIDIS = ((68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37))
_LINE_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")


def _colour(value: float, lo: float, hi: float) -> str:
    t = 0.0 if hi <= lo else min(max((value - lo) / (hi - lo), 0.0), 1.0)
    seg = min(int(t * 4), 3)
    f = t * 4 - seg
    a, b = _VIRIDIS[seg], _VIRIDIS[seg + 1]
    return "#" + "".join(f"{round(x + (y - x) * f):02x}" for x, y in zip(a, b))


def _text_colour(value: float, lo: float, hi: float) -> str:
    t = 0.0 if hi <= lo else (value - lo) / (hi - lo)
    return "#000" if t > 0.6 else "#fff"


def heatmap_svg(
    rows: Sequence[str],
    cols: Sequence[str],
    values: Sequence[Sequence[float | None]],
    title: str,
    row_title: str = "",
    col_title: str = "",
    lo: float = 0.0,
    hi: float = 100.0,
) -> str:
    """A labelled grid of coloured cells with the value printed in each (None = grey, no data)."""
    cell_w, cell_h = max(38, 7 * max((len(c) for c in cols), default=4)), 24
    left = 12 + 7 * max((len(r) for r in rows), default=4)
    top, width = 56, 0
    width = max(left + cell_w * len(cols) + 20, 12 + int(7.5 * len(title)))
    height = top + cell_h * len(rows) + 28
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="figure-svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
        f'<text x="4" y="16" font-size="13" font-weight="bold">{escape(title)}</text>',
    ]
    if col_title:
        out.append(f'<text x="{left}" y="32" font-size="11" fill="#555">{escape(col_title)}</text>')
    for j, col in enumerate(cols):
        x = left + cell_w * j + cell_w / 2
        out.append(f'<text x="{x}" y="{top - 6}" font-size="11" text-anchor="middle">{escape(col)}</text>')
    for i, row in enumerate(rows):
        y = top + cell_h * i
        out.append(f'<text x="{left - 6}" y="{y + 16}" font-size="11" text-anchor="end">{escape(row)}</text>')
        for j, value in enumerate(values[i]):
            x = left + cell_w * j
            if value is None:
                out.append(f'<rect x="{x}" y="{y}" width="{cell_w - 1}" height="{cell_h - 1}" fill="#ddd"/>')
                continue
            tip = f"{row} / {col_title + ' ' if col_title else ''}{cols[j]}: {value:.2f}"
            out.append(
                f'<rect x="{x}" y="{y}" width="{cell_w - 1}" height="{cell_h - 1}" '
                f'fill="{_colour(value, lo, hi)}"><title>{escape(tip)}</title></rect>'
                f'<text x="{x + cell_w / 2}" y="{y + 16}" font-size="10" text-anchor="middle" '
                f'fill="{_text_colour(value, lo, hi)}">{value:.1f}</text>'
            )
    if row_title:
        out.append(
            f'<text x="4" y="{height - 8}" font-size="11" fill="#555">rows: {escape(row_title)}</text>'
        )
    out.append("</svg>")
    return "".join(out)


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """Round tick values (1, 2 or 5 times a power of ten apart) inside [lo, hi]."""
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / (n - 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(lo / step) * step
    return [first + k * step for k in range(int((hi - first) / step + 1e-9) + 1)]


def _padded(values: Sequence[float]) -> tuple[float, float]:
    lo, hi = min(values), max(values)
    pad = (hi - lo) * 0.1 or abs(hi) * 0.1 or 1.0
    return lo - pad, hi + pad


def _axes(
    xs: Sequence[float], ys: Sequence[float], title: str, xlabel: str, ylabel: str, width=460, height=320
) -> tuple[list[str], Callable[[float], float], Callable[[float], float]]:
    """Frame, ticks and labels; returns the SVG parts and the x/y data->pixel maps."""
    left, right, top, bottom = 64, 16, 30, 44
    (x0, x1), (y0, y1) = _padded(xs), _padded(ys)

    def px(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * (width - left - right)

    def py(y: float) -> float:
        return height - bottom - (y - y0) / (y1 - y0) * (height - top - bottom)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="figure-svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
        f'<text x="4" y="16" font-size="13" font-weight="bold">{escape(title)}</text>',
        f'<rect x="{left}" y="{top}" width="{width - left - right}" height="{height - top - bottom}" '
        'fill="none" stroke="#888"/>',
    ]
    for x in _ticks(x0, x1):
        parts.append(
            f'<line x1="{px(x):.1f}" x2="{px(x):.1f}" y1="{top}" y2="{height - bottom}" stroke="#eee"/>'
            f'<text x="{px(x):.1f}" y="{height - bottom + 14}" font-size="10" text-anchor="middle">{x:.3g}</text>'
        )
    for y in _ticks(y0, y1):
        parts.append(
            f'<line x1="{left}" x2="{width - right}" y1="{py(y):.1f}" y2="{py(y):.1f}" stroke="#eee"/>'
            f'<text x="{left - 4}" y="{py(y) + 3:.1f}" font-size="10" text-anchor="end">{y:.3g}</text>'
        )
    parts.append(
        f'<text x="{(left + width - right) / 2}" y="{height - 8}" font-size="11" text-anchor="middle">'
        f"{escape(xlabel)}</text>"
        f'<text x="14" y="{(top + height - bottom) / 2}" font-size="11" text-anchor="middle" '
        f'transform="rotate(-90 14 {(top + height - bottom) / 2})">{escape(ylabel)}</text>'
    )
    return parts, px, py


def scatter_svg(points: Sequence[tuple[str, float, float]], title: str, xlabel: str, ylabel: str) -> str:
    """Labelled points on their own axes (used for alignment vs uniformity, which are not percentages)."""
    parts, px, py = _axes([p[1] for p in points], [p[2] for p in points], title, xlabel, ylabel)
    for k, (label, x, y) in enumerate(points):
        colour = _LINE_COLOURS[k % len(_LINE_COLOURS)]
        parts.append(
            f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="6" fill="{colour}">'
            f"<title>{escape(label)}: alignment {x:.4f}, uniformity {y:.4f}</title></circle>"
            f'<text x="{px(x) + (-8 if px(x) > 300 else 8):.1f}" y="{py(y) - 8:.1f}" font-size="10" '
            f'text-anchor="{"end" if px(x) > 300 else "start"}">{escape(label)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def line_chart_svg(
    series: dict[str, Sequence[tuple[float, float]]], title: str, xlabel: str, ylabel: str
) -> str:
    """One polyline (with point markers) per named series, plus a legend."""
    xs = [x for s in series.values() for x, _ in s]
    ys = [y for s in series.values() for _, y in s]
    parts, px, py = _axes(xs, ys, title, xlabel, ylabel, width=520)
    for k, (name, points) in enumerate(series.items()):
        colour = _LINE_COLOURS[k % len(_LINE_COLOURS)]
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in points)
        parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        parts.extend(
            f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="2.5" fill="{colour}"><title>{escape(name)} step {x:g}: '
            f"{y:.4g}</title></circle>"
            for x, y in points
        )
        parts.append(
            f'<rect x="{520 - 150}" y="{34 + 14 * k}" width="10" height="10" fill="{colour}"/>'
            f'<text x="{520 - 136}" y="{43 + 14 * k}" font-size="10">{escape(name)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)
