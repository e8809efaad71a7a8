"""Corpus-scale encoding: streamed inputs, deterministic shards with a manifest, resumable runs.

readers.py streams rows (text, JSONL, parquet; gzip/bzip2/xz) with their row numbers; shards.py cuts
them into shards and writes one shard file; manifest.py records and checks what a folder holds;
encode_run.py drives a run on an engine (engine_local.py in-process, engine_ray.py on a pool of Ray actors).
"""
