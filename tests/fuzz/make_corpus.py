#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz targets (tests/fuzz/corpus/<target>/), deterministically.

A few valid files and a few interesting invalid ones per target, each under 4 KB. The corpus
is committed; rerun this script after changing it (it rewrites only the files it names, so
crash reproducers added by hand as corpus/<target>/crash-* stay).
    python3 tests/fuzz/make_corpus.py
"""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")

SIZES = {"U8": 1, "I8": 1, "BOOL": 1, "U16": 2, "I16": 2, "BF16": 2, "F16": 2,
         "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8}


def raw(header_text, data=b"", length=None):
    """8-byte little-endian length, the header text as given, then the data buffer."""
    h = header_text.encode() if isinstance(header_text, str) else header_text
    n = len(h) if length is None else length
    return struct.pack("<Q", n) + h + data


def safetensors(tensors, metadata=None):
    """tensors: list of (name, dtype, shape, bytes), laid out in order, as the reference writer does."""
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, payload in tensors:
        n = SIZES[dtype]
        for d in shape:
            n *= d
        assert len(payload) == n, (name, len(payload), n)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(payload)]}
        data += payload
    text = json.dumps(header, separators=(",", ":"))
    text += " " * ((8 - len(text) % 8) % 8)
    return raw(text, data)


def bf16(values):
    return b"".join(struct.pack("<f", v)[2:] for v in values)


def i32(values):
    return struct.pack("<%di" % len(values), *values)


def f32(values):
    return struct.pack("<%df" % len(values), *values)


def inputs(m, k, h, ids, weights=None, hidden=None):
    hidden = hidden if hidden is not None else [((i % 7) - 3) * 0.5 for i in range(m * h)]
    weights = weights if weights is not None else [1.0 / k] * (m * k)
    return [("hidden", "BF16", [m, h], bf16(hidden)),
            ("topk_ids", "I32", [m, k], i32(ids)),
            ("topk_weights", "F32", [m, k], f32(weights))]


def shape_prefix(m, k, h, experts_per_card, cards):
    """The 4 bytes fuzz_inputs.cpp turns into a shape (see its comment)."""
    return bytes([m - 1, k - 1, h // 32 - 1, ((cards - 1) << 6) | (experts_per_card - 1)])


def write(target, name, content):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    data = content.encode() if isinstance(content, str) else content
    assert len(data) < 4096, (target, name, len(data))
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def safetensors_corpus():
    t = "safetensors"
    write(t, "valid_inputs", safetensors(inputs(2, 2, 32, [0, 5, 7, 1])))
    write(t, "valid_metadata", safetensors([("w", "U8", [2, 3], bytes(range(6)))], {"format": "pt", "note": "seed"}))
    write(t, "valid_all_dtypes", safetensors([(f"t_{d}", d, [2], bytes(range(2 * n))) for d, n in sorted(SIZES.items())]))
    write(t, "valid_scalar_and_empty", safetensors([("s", "F64", [], struct.pack("<d", 2.5)),
                                                    ("e", "U8", [0, 16], b""), ("z", "F32", [3, 0, 7], b"")]))
    write(t, "valid_empty_header", raw("{}      "))
    write(t, "bad_short", b"\x08\x00\x00")
    write(t, "bad_length_absurd", raw("{}", length=1 << 60))
    write(t, "bad_length_past_end", raw("{}", length=64))
    write(t, "bad_not_json", raw('{"a":'))
    write(t, "bad_not_object", raw("[1,2,3]"))
    write(t, "bad_duplicate_key", raw('{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
                                      '"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"\x01"))
    write(t, "bad_deep_nesting", raw('{"a":{"shape":[[[[[[[[1]]]]]]]]}}'))
    write(t, "bad_overlap", raw('{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},'
                                '"b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}}', b"abc"))
    write(t, "bad_gap", raw('{"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}', b"ab"))
    write(t, "bad_trailing", raw('{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"ab"))
    write(t, "bad_dtype", raw('{"a":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}}', b"a"))
    write(t, "bad_negative_dim", raw('{"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}}'))
    write(t, "bad_overflow_shape", raw('{"a":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,0]}}'))
    write(t, "bad_zero_times_huge", raw('{"a":{"dtype":"U8","shape":[18446744073709551615,0],"data_offsets":[0,0]}}'))
    write(t, "bad_size_mismatch", raw('{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}', b"abcd"))
    write(t, "bad_metadata_value", raw('{"__metadata__":{"k":1}}'))
    write(t, "bad_extra_key", raw('{"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0],"x":1}}'))
    write(t, "bad_utf8", raw(b'{"\xff":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}}'))


def inputs_corpus():
    t = "inputs"
    write(t, "valid_m2_k2", shape_prefix(2, 2, 32, 8, 1) + safetensors(inputs(2, 2, 32, [0, 5, 7, 1])))
    write(t, "valid_duplicates", shape_prefix(2, 3, 32, 4, 2) + safetensors(inputs(2, 3, 32, [4, 4, 5, 7, 4, 0])))
    write(t, "valid_all_remote", shape_prefix(1, 2, 32, 4, 4) + safetensors(inputs(1, 2, 32, [0, 1])))
    write(t, "valid_subnormal_nan", shape_prefix(1, 1, 32, 1, 1) +
          safetensors(inputs(1, 1, 32, [0], weights=[1e-40], hidden=[float("nan"), -0.0] + [1e-39] * 30)))
    write(t, "bad_id_negative", shape_prefix(2, 2, 32, 8, 1) + safetensors(inputs(2, 2, 32, [0, -1, 2, 3])))
    write(t, "bad_id_too_large", shape_prefix(2, 2, 32, 8, 1) + safetensors(inputs(2, 2, 32, [0, 1, 2, 8])))
    write(t, "bad_shape", shape_prefix(2, 2, 32, 8, 1) + safetensors(inputs(1, 4, 32, [0, 1, 2, 3])))
    # topk_ids I64 as torch.topk returns them: accepted; an I64 id beyond int32 range (its low
    # 32 bits a valid id) is invalid like any bad id; another dtype is rejected.
    ids_i64 = inputs(2, 2, 32, [0, 1, 2, 3])
    ids_i64[1] = ("topk_ids", "I64", [2, 2], struct.pack("<4q", 0, 1, 2, 3))
    write(t, "valid_ids_i64", shape_prefix(2, 2, 32, 8, 1) + safetensors(ids_i64))
    beyond = inputs(2, 2, 32, [0, 1, 2, 3])
    beyond[1] = ("topk_ids", "I64", [2, 2], struct.pack("<4q", 0, (1 << 32) + 1, 2, 3))
    write(t, "bad_id_i64_beyond_int32", shape_prefix(2, 2, 32, 8, 1) + safetensors(beyond))
    bad_dtype = inputs(2, 2, 32, [0, 1, 2, 3])
    bad_dtype[1] = ("topk_ids", "I16", [2, 2], struct.pack("<4h", 0, 1, 2, 3))
    write(t, "bad_ids_dtype", shape_prefix(2, 2, 32, 8, 1) + safetensors(bad_dtype))
    write(t, "bad_missing", shape_prefix(2, 2, 32, 8, 1) + safetensors(inputs(2, 2, 32, [0, 1, 2, 3])[:2]))
    write(t, "bad_not_safetensors", shape_prefix(1, 1, 32, 1, 1) + b"hidden")


def config_corpus():
    t = "config"
    write(t, "valid_full", """contract: 1
hidden: 4096
intermediate: 2048
experts: 192
top_k: 6
rows: 2
cards: 4
card: 0
layers: 43
seed: 20261129
swiglu:
  limit: 10.0
  alpha: 1.0
  up_bias: 0.0
gate_up_layout: split
weights:
  prefix: ""
gate:
  min_saving_ms: 0.50
""")
    write(t, "valid_gptoss", "hidden: 2880\nintermediate: 2880\nexperts: 32\ntop_k: 4\ncards: 1\n"
                             "swiglu: {limit: 7, alpha: 1.702, up_bias: 1}\ngate_up_layout: interleaved\n"
                             "weights: {prefix: \"model.layers.3.mlp.experts.\"}\n")
    write(t, "valid_empty", "")
    write(t, "valid_comment_only", "# nothing here\n")
    write(t, "valid_flow", "{rows: 4, seed: 16, gate: {min_saving_ms: 1e-3}}\n")
    write(t, "valid_anchor", "swiglu: &s {alpha: 2}\nseed: 7\n")
    write(t, "bad_unknown_key", "swiglu:\n  limt: 7\n")
    write(t, "bad_duplicate", "rows: 1\nrows: 2\n")
    write(t, "bad_two_docs", "rows: 1\n---\nrows: 2\n")
    write(t, "bad_quoted_int", "rows: \"2\"\n")
    write(t, "bad_limit_not_bf16", "swiglu: {limit: 7.01}\n")
    write(t, "bad_inf", "swiglu: {alpha: .inf}\n")
    write(t, "bad_overflow", "seed: 18446744073709551616\nhidden: 2147483648\n")
    write(t, "bad_sequence_root", "- rows\n- 2\n")
    write(t, "bad_tagged_str", "rows: !!str 2\n")  # a string-tagged scalar is a string: rejected
    write(t, "bad_alias_key", "a: &x rows\n*x : 2\n")
    write(t, "bad_malformed", "swiglu: {limit: [\n")
    write(t, "bad_nested_flow", "rows: " + "[" * 64 + "]" * 64 + "\n")
    write(t, "bad_cross_key", "experts: 10\ncards: 4\ncard: 4\n")


def config_set_corpus():
    t = "config_set"
    write(t, "valid_simple", "swiglu.limit=7\nrows=4\nseed=1\n")
    write(t, "valid_group", "swiglu={limit: 7, alpha: 1.702, up_bias: 1}\ngate_up_layout=interleaved\n")
    write(t, "valid_prefix", "weights.prefix=model.layers.0.mlp.experts.\ngate.min_saving_ms=0.25\n")
    write(t, "valid_null_prefix", "weights.prefix=\n")
    write(t, "bad_no_equals", "rows\n=4\n")
    write(t, "bad_unknown", "swiglu.limt=7\nrows.x=1\nnothing=1\n")
    write(t, "bad_values", "rows=-1\nseed=-1\nhidden=100\nswiglu.alpha=nan\nlayers=0\n")
    write(t, "bad_yaml", "swiglu={limit: 7\nrows=[1, 2]\nrows={a: 1}\n")
    write(t, "bad_cross_key", "cards=3\ncard=5\n")


def sweep_corpus():
    t = "sweep"
    # fuzz_sweep.cpp resolves base_config against a directory holding base.yaml (a small valid config).
    write(t, "valid_small", "sweep:\n  name: small\n  base_config: base.yaml\n  set: {layers: 43, swiglu.limit: 7}\n"
                            "  axes:\n    hidden: [128, 256]\n    pattern: [six_local, all_remote]\n"
                            "    variant: [baseline, paired_epilogue]\n    card: [0, 1]\n  repeats: 3\n  warmup: 1\n")
    write(t, "valid_all", "sweep:\n  axes:\n    pattern: all\n    variant: all\n")
    write(t, "valid_nested_set", "sweep:\n  set:\n    swiglu: {alpha: 1.702, up_bias: 1}\n    rows: 1\n"
                                 "  axes: {swiglu.limit: [7, 7.5, 10]}\n")
    write(t, "valid_flow", "{sweep: {name: f, axes: {top_k: [1, 2, 4], rows: [1, 2]}}}\n")
    # 10 × 10 × 60 = 6000 points: above what fuzz_sweep expands while fuzzing, replayed in full.
    write(t, "valid_large", "sweep:\n  axes:\n    rows: [%s]\n    top_k: [%s]\n    layers: [%s]\n" % (
        ", ".join(map(str, range(1, 11))), ", ".join(map(str, range(1, 11))), ", ".join(map(str, range(1, 61)))))
    write(t, "bad_empty", "")
    write(t, "bad_unknown_key", "sweep:\n  axis: {hidden: [128]}\n")
    write(t, "bad_empty_axis", "sweep:\n  axes: {hidden: []}\n")
    write(t, "bad_duplicate_value", "sweep:\n  axes: {hidden: [128, 128]}\n")
    write(t, "bad_pattern", "sweep:\n  axes: {pattern: [six_locale]}\n")
    write(t, "bad_point", "sweep:\n  set: {cards: 4}\n  axes: {card: [0, 4], experts: [8, 10]}\n")
    write(t, "bad_set_and_axis", "sweep:\n  set: {swiglu: {limit: 7}}\n  axes: {swiglu.limit: [7]}\n")
    write(t, "bad_too_many_points", "sweep:\n  axes:\n" + "".join(
        "    %s: [%s]\n" % (k, ", ".join(str(v) for v in range(1, 12))) for k in ("rows", "top_k", "layers", "seed", "experts")))
    write(t, "bad_base_missing", "sweep:\n  base_config: nowhere.yaml\n  axes: {rows: [1]}\n")
    write(t, "bad_name", "sweep:\n  name: \"a/b\"\n  axes: {rows: [1]}\n")
    write(t, "bad_repeats", "sweep:\n  repeats: 0\n  axes: {rows: [1]}\n")
    write(t, "bad_comma_in_value", "sweep:\n  axes: {weights.prefix: [\"a,b\"]}\n")


DATA = os.path.join(HERE, "..", "tools", "data")  # cards and a step.json of real runs


def compact(doc):
    return json.dumps(doc, separators=(",", ":"), sort_keys=True)


def kept(name):
    with open(os.path.join(DATA, name)) as f:
        return json.load(f)


def small_card():
    """step4/card0.json (PoCL, schema 3, timed) cut to fit 4 KB, as its schema allows: the pattern's
    baseline and two_launch, two samples and two kernels each, the two_launch gate; long strings
    shortened."""
    c = kept("step4/card0.json")
    keep = ("baseline", "two_launch")
    c["correctness"]["by_variant"] = {v: c["correctness"]["by_variant"][v] for v in keep}
    t = c["timings"]
    for key in ("interleaving", "sample", "device_time", "host_time"):
        t[key] = t[key][:24]
    t["bandwidth"]["source"] = t["bandwidth"]["source"][:24]
    for p in t["patterns"].values():
        p["variants"] = {v: p["variants"][v] for v in keep}
        for v in p["variants"].values():
            v["samples"] = {k: x[:2] for k, x in v["samples"].items()}
            v["kernels"] = v["kernels"][:2]
    c["projections"] = {"two_launch": c["projections"]["two_launch"]}
    g = c["gate"]
    g["ci"], g["verdicts"] = g["ci"][:24], g["verdicts"][:24]
    g["candidates"] = [x for x in g["candidates"] if x["candidate"] == "two_launch"]
    g["candidates"][0]["verdict"]["line"] = g["candidates"][0]["verdict"]["line"][:48]
    c["device"]["modules"] = c["device"]["modules"][:24]
    return c


def small_step():
    """step4/step.json cut to fit 4 KB: the step of two_launch alone, the interference of one card."""
    s = kept("step4/step.json")
    s["gate"]["candidates"] = [x for x in s["gate"]["candidates"] if x["candidate"] == "two_launch"][:1]
    for key in ("ci", "verdicts"):
        if key in s["gate"]:
            s["gate"][key] = s["gate"][key][:24]
    s["gate"]["candidates"][0]["verdict"]["line"] = s["gate"]["candidates"][0]["verdict"]["line"][:48]
    for p in s["patterns"].values():
        p["variants"] = {v: p["variants"][v] for v in ("baseline", "two_launch") if v in p["variants"]}
    s["interference"] = [x for x in s["interference"] if x["variant"] in ("baseline", "two_launch")][:2]
    s["placement"] = s["placement"][:2]
    s["how"], s["alignment"] = s["how"][:24], s["alignment"][:24]
    return s


def card_corpus():
    t = "card"
    card = small_card()
    write(t, "valid_schema3_timed", compact(card))
    untimed = dict(card, timings=None, projections=None, launch_floor=None, gate=None, timing_skipped="--no-timing")
    write(t, "valid_schema3_no_timing", compact(untimed))
    write(t, "valid_schema2_no_timing", compact(kept("card0_h200_no_timing.json")))
    write(t, "valid_step", compact(small_step()))
    gate = card["gate"]["candidates"][0]
    write(t, "bad_required_key_deleted", compact(dict(card, gate=dict(card["gate"], candidates=[
        dict(gate, verdict={k: v for k, v in gate["verdict"].items() if k != "line"})]))))
    write(t, "bad_unknown_key", compact(dict(card, config=dict(card["config"], hiden=128))))
    write(t, "bad_wrong_type", compact(dict(card, card="0")))
    write(t, "bad_schema_4", compact(dict(card, schema=4)))
    write(t, "bad_schema3_key_in_schema2", compact(dict(kept("card0_h200_no_timing.json"), launch_floor=None,
                                                        timing_skipped="--no-timing", variants_not_valid={})
                                                   | {"device": dict(kept("card0_h200_no_timing.json")["device"],
                                                                     timer_resolution_ns=1.0)}))
    write(t, "bad_not_json", compact(card)[:200])
    write(t, "bad_nested_65", "[" * 65 + "]" * 65)
    write(t, "bad_step_key_deleted", compact({k: v for k, v in small_step().items() if k != "placement"}))


def moe_request_corpus():
    """Byte 0 (fuzz_moe_request.cpp): bit 0 JSON (0) or safetensors (1), bits 1-2 the shape:
    0 = H 32, K 2, M 2; 1 = H 64, K 6, M 2; 2 = H 32, K 1, M 1; 3 = H 128, K 8, M 4."""
    t = "moe_request"

    def js(shape, doc):
        return bytes([shape << 1]) + (doc if isinstance(doc, str) else compact(doc)).encode()

    def st(shape, tensors):
        return bytes([shape << 1 | 1]) + safetensors(tensors)

    bits = [[0x3F80 + i for i in range(32)], [0xBF00 + i for i in range(32)]]
    base = {"hidden_bf16": bits, "topk_ids": [[0, 5], [7, 1]], "topk_weights": [[0.5, 0.5], [1.0, 0.0]]}
    write(t, "valid_json_bf16", js(0, base))
    write(t, "valid_json_numbers", js(0, {"hidden": [[(i % 7 - 3) * 0.25 for i in range(32)]] * 2,
                                          "topk_ids": [[1, 2], [3, 4]], "topk_weights": [[0.25, -0.0], [1e-40, 3]],
                                          "timings": True, "out_format": "bf16_base64"}))
    write(t, "valid_json_one_row", js(2, {"hidden_bf16": [bits[0]], "topk_ids": [[3]], "topk_weights": [[1]],
                                          "out_format": "numbers", "timings": False}))
    write(t, "valid_json_ids_i64", js(0, dict(base, topk_ids=[[0, 9223372036854775807], [18446744073709551615, 1]])))
    write(t, "valid_safetensors", st(0, inputs(2, 2, 32, [0, 5, 7, 1])))
    write(t, "valid_safetensors_one_row", st(2, inputs(1, 1, 32, [2])))
    ids64 = inputs(2, 2, 32, [0, 1, 2, 3])
    ids64[1] = ("topk_ids", "I64", [2, 2], struct.pack("<4q", 0, 1, 2, 3))
    write(t, "valid_safetensors_ids_i64", st(0, ids64))
    write(t, "bad_json_unknown_key", js(0, dict(base, hiden=[[1]])))
    write(t, "bad_json_duplicate_key", js(0, compact(base)[:-1] + ',"topk_ids":[[1,2],[3,4]]}'))
    write(t, "bad_json_too_many_rows", js(2, base))
    write(t, "bad_json_short_row", js(0, dict(base, topk_ids=[[0], [1, 2]])))
    write(t, "bad_json_nan_bits", js(0, dict(base, hidden_bf16=[bits[0], [0x7FC0] * 32])))
    write(t, "bad_json_number_beyond_bf16", js(0, {"hidden": [[1e39] * 32] * 2, "topk_ids": base["topk_ids"],
                                                   "topk_weights": base["topk_weights"]}))
    write(t, "bad_json_number_beyond_double", js(2, '{"hidden":[[1e400]],"topk_ids":[[0]],"topk_weights":[[1]]}'))
    write(t, "bad_json_both_hidden", js(0, dict(base, hidden=[[0] * 32] * 2)))
    write(t, "bad_json_nested_row", js(0, dict(base, topk_ids=[[[0], 5], [7, 1]])))
    write(t, "bad_json_id_string", js(0, dict(base, topk_ids=[["0", 5], [7, 1]])))
    write(t, "bad_json_array_root", js(0, "[1,2]"))
    write(t, "bad_json_malformed", js(0, '{"topk_ids":[[0,'))
    write(t, "bad_json_not_utf8", bytes([0]) + b'{"topk_ids": "' + bytes([0xFF, 0xFE]) + b'"}')
    write(t, "bad_json_out_format", js(0, dict(base, out_format="fp8")))
    write(t, "bad_safetensors_extra_tensor", st(0, inputs(2, 2, 32, [0, 5, 7, 1]) + [("x", "U8", [1], b"x")]))
    write(t, "bad_safetensors_rows_differ", st(0, inputs(2, 2, 32, [0, 5, 7, 1])[:2] +
                                               [("topk_weights", "F32", [1, 2], f32([0.5, 0.5]))]))
    write(t, "bad_safetensors_nan_weight", st(0, inputs(2, 2, 32, [0, 5, 7, 1], weights=[0.5, float("nan"), 1, 0])))
    write(t, "bad_safetensors_inf_hidden", st(2, inputs(1, 1, 32, [0], hidden=[float("inf")] * 32)))
    write(t, "bad_safetensors_too_many_rows", st(2, inputs(2, 1, 32, [0, 1])))
    write(t, "bad_safetensors_hidden_f32", st(2, [("hidden", "F32", [1, 32], f32([0.0] * 32))] +
                                              inputs(1, 1, 32, [0])[1:]))


if __name__ == "__main__":
    safetensors_corpus()
    inputs_corpus()
    config_corpus()
    config_set_corpus()
    sweep_corpus()
    card_corpus()
    moe_request_corpus()
