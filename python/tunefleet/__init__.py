"""tunefleet: ask a GPU-kernel tuning fleet for the best config of a kernel.

The message and gRPC stubs (tunefleet.v1.*_pb2) are generated from proto/ when
the project is built; the assembled package lives in <build>/python.
"""

__all__ = []
