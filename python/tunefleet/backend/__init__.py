"""The worker's Python kernel backend (BACKEND_PYTHON, docs/python-backend.md).

Processes the C++ worker daemon starts, never imported by clients:
  python -m tunefleet.backend.probe        toolkit, interpreter paths, GPUs
  python -m tunefleet.backend.compile REQ  stages one config, warms the
                                           Triton cache (compile pool)
  python -m tunefleet.backend.bench_child  the benchmark child of one GPU,
                                           speaking bench_child.proto frames
                                           on stdin/stdout
Only the standard library and protobuf are needed to import this package;
torch and triton are imported by the processes that use a GPU.
"""
