"""The edges: decoding recordings, reading logs and configs, writing outputs."""
