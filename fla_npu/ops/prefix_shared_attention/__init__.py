from .attention import prefix_shared_attention
from .naive import naive_prefix_shared_attention

__all__ = ["prefix_shared_attention", "naive_prefix_shared_attention"]
