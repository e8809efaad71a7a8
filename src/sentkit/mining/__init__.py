"""Bitext mining: k-NN both ways with FAISS, margin scoring, candidate retrieval.

margin.py scores candidates (Artetxe & Schwenk 2019), retrieval.py picks pairs from them (max, union,
intersect), search.py finds the neighbours over sharded vectors (exact.py: blocked matrix products;
approximate.py: a FAISS index, re-scored exactly; recall.py: its recall measured), vectors.py
reads vectors from memory or from an encoded shard folder, mine.py runs the pipeline and writes pairs.
Each k-NN direction runs block by block (knn_run.py) on an engine: in process (engine_local.py) or on Ray
workers each holding a part of the searched side (engine_ray.py, key_part.py); the finished blocks are kept in
a work folder beside the output (work_folder.py), so a stopped run resumes.
The BUCC task (sentkit.tasks.bitext) scores and retrieves with the same margin.py and retrieval.py.
"""
