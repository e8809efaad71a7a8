"""Training-set construction: one folder per method that needs its own (`ease/`, `jcse/`), the builders
shared by methods beside them (`triplets`: NLI triplets; `specialization`: Emu's rows), and `specs`, which
resolves a data spec (`--data`) into a `Dataset`; inside this package only `specs` imports a method folder.
"""
