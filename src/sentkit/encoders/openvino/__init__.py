"""The OpenVINO runtime path: the OpenVINO encoder and the exporter (fp32 IR, NNCF int8), built on the ONNX
path's contract and fp32 graph. Arrows run one way: export.py -> encoder.py -> ../onnx."""
