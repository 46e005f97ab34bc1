"""Code a removed function left behind when it was inlined into a method (flash-attn's
``flash_attn_supports_fp8``, inlined at vLLM v0.25.0 into
``FlashAttentionBackend.supports_kv_cache_dtype``): the sources of the tests of where a
removed symbol's code went."""

SUPPORTS_FP8 = """\
def supports_fp8() -> bool:
    if current_platform.is_xpu():
        return True
    return (
        get_flash_attn_version() == 3
        and current_platform.is_device_capability_family(90)
    )
"""
FP8_INLINED = """\
class FlashBackend:
    def supports_dtype(self, dtype) -> bool:
        if dtype == "fp8":
            if current_platform.is_xpu():
                return True
            return (
                get_flash_attn_version() == 3
                and current_platform.is_device_capability_family(90)
            )
        return dtype in ["auto", "float16", "bfloat16"]
"""
