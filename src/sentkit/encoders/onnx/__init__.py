"""The ONNX runtime path: the folder contract, the onnxruntime encoder, and the exporter (fp32, dynamic and
static int8). Arrows run one way: export.py -> encoder.py -> contract.py."""
