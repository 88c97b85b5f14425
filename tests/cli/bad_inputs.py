#!/usr/bin/env python3
"""The bad-input table: every case runs the dcpsim binary on a hostile input and asserts that it
  - exits 2 (input error) or 1 (runtime failure), as the case expects, never 0 and never a signal;
  - prints exactly one line on stderr;
  - leaves no output file (nor any temporary file) behind;
  - leaves its inputs byte-for-byte untouched.
Usage: bad_inputs.py DCPSIM SOURCE_DIR [--list] [NAME_FILTER]"""
import concurrent.futures, gzip, hashlib, json, os, shutil, sqlite3, subprocess, sys, tempfile, time

DCPSIM, SRC = sys.argv[1], sys.argv[2]
FILTER = sys.argv[3] if len(sys.argv) > 3 else ""
DATA = os.path.join(SRC, "tests", "data")
PROFILE = os.path.join(SRC, "models", "profiles", "h200-sxm.json")
MEASURED = os.path.join(SRC, "traces", "measured", "h200", "gqa_n2_b16_ctx8k_graph.pb.gz")  # gzip-compressed
INT64_MAX = 9223372036854775807
CASES = []


def case(name, argv, files=None, code=2, outputs=(), timeout=60):
    """argv and file contents may use {d} for the case's scratch directory."""
    CASES.append(dict(name=name, argv=argv, files=files or {}, code=code, outputs=outputs, timeout=timeout))


def deep(n):
    return "[" * n + "]" * n


def profile(edit):
    p = json.load(open(PROFILE))
    edit(p)
    return json.dumps(p)


def setp(path, value):
    def edit(p):
        node = p
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = value
    return edit


def mooncake(row):
    return json.dumps(row) + "\n"


def kineto(events=None, **top):
    doc = {"traceEvents": events if events is not None else [
        {"ph": "X", "cat": "kernel", "name": "k", "ts": 10, "dur": 5, "pid": 0, "tid": 7, "args": {"device": 0, "stream": 7}}]}
    doc.update(top)
    return json.dumps(doc)


def kernel_event(**kw):
    e = {"ph": "X", "cat": "kernel", "name": "k", "ts": 10, "dur": 5, "pid": 0, "tid": 7, "args": {"device": 0, "stream": 7}}
    e.update(kw)
    return e


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def v2_trace():
    """The committed measured trace in version 2 framing (a CRC32C after every record): as written by the
    runner now, or a version 1 trace re-framed."""
    raw = gzip.decompress(open(MEASURED, "rb").read())
    if raw[:8] == b"DCPTRC2\n":
        return raw
    assert raw[:8] == b"DCPTRC1\n"
    out, i = bytearray(b"DCPTRC2\n"), 8
    while i < len(raw):
        length, shift, start = 0, 0, i
        while True:
            b = raw[i]
            i += 1
            length |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        body = raw[i:i + length]
        i += length
        crc = crc32c(body)
        masked = (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF
        out += raw[start:i] + masked.to_bytes(4, "little")
    return bytes(out)


def nsys_db(path, sql):
    raw = gzip.open(os.path.join(DATA, "nsys_saxpy.reduced.sqlite.gz")).read()
    open(path, "wb").write(raw)
    db = sqlite3.connect(path)
    db.executescript(sql)
    db.commit()
    db.close()


SIM = ["simulate", "--batch", "2", "--context", "1k"]
# import states the scenario the profile ran, in full (no default is assumed).
IMPORT_SCENARIO = ["--dcp", "2", "--heads", "16", "--head-dim", "512", "--kv-heads", "1", "--batch", "1", "--context",
                   "1k", "--strategy", "ag-rs"]

# --- crashes: deep JSON ------------------------------------------------------------------------------------
case("profiles --show deep profile", ["profiles", "--show", "{d}/deep.json"], {"deep.json": deep(100000)})
case("validate --profile deep profile", ["validate", "--measured", MEASURED, "--profile", "{d}/deep.json"],
     {"deep.json": deep(100000)})
case("simulate --profile deep object", SIM + ["--profile", "{d}/deep.json"], {"deep.json": '{"a":' * 100000 + "1" + "}" * 100000})
case("import kineto deep args", ["import", "--kineto", "{d}/k.json"] + IMPORT_SCENARIO + ["--out", "{d}/o.pb"],
     {"k.json": '{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":1,"args":' + deep(100000) + "}]}"},
     outputs=["o.pb"])
case("import kineto deep top", ["import", "--kineto", "{d}/k.json"] + IMPORT_SCENARIO + ["--out", "{d}/o.pb"],
     {"k.json": '{"traceEvents":[],"x":' + deep(100000) + "}"}, outputs=["o.pb"])
case("merge deep partials", ["merge", "--input", "{d}/p.json", "--out", "{d}/o.json"], {"p.json": deep(100000)},
     outputs=["o.json"])
case("replay mooncake deep row", ["replay", "--requests", "{d}/r.jsonl", "--out", "{d}/o.csv"],
     {"r.jsonl": '{"timestamp":' + deep(100000) + "}\n"}, outputs=["o.csv"])
case("profile launch latency 1e300", SIM + ["--profile", "{d}/p.json"],
     {"p.json": profile(setp(["launch", "gpu_launch_latency", "value"], 1e300))})
# A bandwidth of 1 B/s is impossible hardware: refused when the profile loads (it used to fail inside SimGrid's
# run, exit 1).
case("profile nvlink 1 B/s", SIM + ["--profile", "{d}/p.json", "--out", "{d}/o.pb", "--chrome", "{d}/o.json"],
     {"p.json": profile(setp(["nvlink", "measured_bandwidth", "value"], 1e-9))}, outputs=["o.pb", "o.json"])
# The slowest bandwidth a profile may hold (1 MB/s) with a step whose data would take longer than one simulation
# spans: refused before the run (SimGrid aborted, or ran off its clock, exit 1).
case("profile nvlink 1 MB/s long step", ["simulate", "--batch", "20000", "--context", "1k", "--strategy", "direct",
     "--profile", "{d}/p.json", "--out", "{d}/o.pb"],
     {"p.json": profile(setp(["nvlink", "measured_bandwidth", "value"], 1e-3))}, outputs=["o.pb"])
# The scan plot's slice is checked before the scan runs.
case("scan --at without --plot", ["scan", "--dcp", "2", "--batch", "1", "--context", "1k", "--at", "batch=1", "--out",
     "{d}/o.csv"], outputs=["o.csv"])
case("scan --at unknown column", ["scan", "--dcp", "2", "--batch", "1", "--context", "1k", "--at", "colour=red", "--out",
     "{d}/o.csv", "--plot", "{d}/o.png"], outputs=["o.csv", "o.png"])
case("profile launch latency 1e300 scan", ["scan", "--dcp", "2", "--batch", "1", "--context", "1k", "--profile", "{d}/p.json",
     "--out", "{d}/o.csv"], {"p.json": profile(setp(["launch", "gpu_launch_latency", "value"], 1e300))}, outputs=["o.csv"])

# --- signed overflow, wrapped values -------------------------------------------------------------------------
for flag, value in [("--head-dim", "2147483647"), ("--heads", "2147483640"), ("--context", str(INT64_MAX)),
                    ("--dcp", "10000"), ("--dcp", "1153"), ("--dcp", "0"), ("--dcp", "-1"), ("--dcp", "abc"),
                    ("--heads", "0"), ("--heads", "99999999999"), ("--kv-heads", "2147483647"), ("--qk-dim", "2147483647"),
                    ("--batch", "2147483647"), ("--batch", "0"), ("--context", "-5"), ("--context", "1e9"),
                    ("--context", "99999999999999m"), ("--context", "2000000000000"), ("--interleave", "0"),
                    ("--interleave", "2147483647"), ("--head-dim", "65537"), ("--heads", "65544"),
                    ("--context", "nan"), ("--dcp", "nan"), ("--peers-in-flight", "0"), ("--lse-base", "10"),
                    ("--strategy", "bogus"), ("--launch", "bogus"), ("--kv-dtype", "int8")]:
    case(f"simulate {flag} {value}", ["simulate", flag, value, "--batch", "2", "--context", "1k"]
         if flag not in ("--batch", "--context") else ["simulate", flag, value])
case("simulate heads x head-dim x context product overflow",
     ["simulate", "--dcp", "1", "--heads", "65536", "--kv-heads", "65536", "--head-dim", "65536", "--batch", "16777216", "--context", "1m"])
case("simulate dcp 10000 ag-ar", ["simulate", "--dcp", "10000", "--strategy", "ag-ar"])
case("scan --jobs 1000000000", ["scan", "--dcp", "2", "--batch", "1", "--context", "1k", "--jobs", "1000000000", "--out", "{d}/o.csv"],
     outputs=["o.csv"])
case("scan --jobs 0", ["scan", "--dcp", "2", "--jobs", "0", "--out", "{d}/o.csv"], outputs=["o.csv"])
case("scan --dcp 1,100000", ["scan", "--dcp", "1,100000", "--out", "{d}/o.csv"], outputs=["o.csv"])
case("scan --heads 2147483640", ["scan", "--heads", "2147483640", "--out", "{d}/o.csv"], outputs=["o.csv"])
case("hw run --dcp 2000000000", ["hw", "run", "--dcp", "2000000000"])
case("hw run --dcp abc", ["hw", "run", "--dcp", "abc"])
case("hw run --dcp 0", ["hw", "run", "--dcp", "0"])
case("hw run flashinfer-a2a --emulate", ["hw", "run", "--emulate", "--dcp", "2", "--heads", "8", "--strategy", "flashinfer-a2a"])

# --- request traces ------------------------------------------------------------------------------------------
R = ["replay", "--requests", "{d}/r.jsonl", "--out", "{d}/o.csv"]
for label, row in [("timestamp 1e16", {"timestamp": 10**16, "input_length": 10, "output_length": 1}),
                   ("timestamp 1e16 float", {"timestamp": 1e16, "input_length": 10, "output_length": 1}),
                   ("timestamp uint64", {"timestamp": 2**64 - 1, "input_length": 10, "output_length": 1}),
                   ("timestamp negative", {"timestamp": -1, "input_length": 10, "output_length": 1}),
                   ("timestamp string", {"timestamp": "x", "input_length": 10, "output_length": 1}),
                   ("input INT64_MAX", {"timestamp": 1, "input_length": INT64_MAX, "output_length": 1}),
                   ("output INT64_MAX", {"timestamp": 1, "input_length": 1, "output_length": INT64_MAX}),
                   ("input 2^40+1", {"timestamp": 1, "input_length": 2**40 + 1, "output_length": 1}),
                   ("input uint64", {"timestamp": 1, "input_length": 2**64 - 1, "output_length": 1}),
                   ("input negative", {"timestamp": 1, "input_length": -3, "output_length": 1}),
                   ("input float", {"timestamp": 1, "input_length": 1.5, "output_length": 1}),
                   ("input missing", {"timestamp": 1, "output_length": 1})]:
    case(f"mooncake {label}", R, {"r.jsonl": mooncake(row)}, outputs=["o.csv"])
case("mooncake not json", R, {"r.jsonl": "{nope\n"}, outputs=["o.csv"])
case("mooncake array row", R, {"r.jsonl": "[1,2]\n"}, outputs=["o.csv"])
case("mooncake empty", R, {"r.jsonl": "\n"}, outputs=["o.csv"])
A = ["replay", "--requests", "{d}/r.csv", "--out", "{d}/o.csv"]
HDR = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
for label, row in [("year 0000", "0000-01-01 00:00:00,10,1"), ("year 2300", "2300-01-01 00:00:00,10,1"),
                   ("year 9999", "9999-12-31 23:59:59.9999999,10,1"), ("month 13", "2023-13-01 00:00:00,10,1"),
                   ("day 32", "2023-01-32 00:00:00,10,1"), ("feb 29 2023", "2023-02-29 00:00:00,10,1"),
                   ("hour 24", "2023-01-01 24:00:00,10,1"), ("tokens INT64_MAX", f"2023-01-01 00:00:00,{INT64_MAX},1"),
                   ("tokens overflow", "2023-01-01 00:00:00,99999999999999999999,1"),
                   ("tokens negative", "2023-01-01 00:00:00,-1,1"), ("tokens text", "2023-01-01 00:00:00,ten,1"),
                   ("two fields", "2023-01-01 00:00:00,10"), ("quoted", '"2023-01-01 00:00:00",10,1'),
                   ("fraction 10 digits", "2023-01-01 00:00:00.0000000001,10,1")]:
    case(f"azure {label}", A, {"r.csv": HDR + row + "\n"}, outputs=["o.csv"])
case("azure bad header", A, {"r.csv": "a,b,c\n1,2,3\n"}, outputs=["o.csv"])
case("azure header only", A, {"r.csv": HDR}, outputs=["o.csv"])
case("replay unknown format", ["replay", "--requests", "{d}/r.txt", "--out", "{d}/o.csv"], {"r.txt": "x"}, outputs=["o.csv"])
case("replay --kv-capacity-gb nan", ["replay", "--requests", os.path.join(DATA, "mooncake_conversation_trace.head20.jsonl"),
     "--kv-capacity-gb", "nan", "--out", "{d}/o.csv"], outputs=["o.csv"])
case("replay --kv-capacity-gb -1", ["replay", "--requests", os.path.join(DATA, "mooncake_conversation_trace.head20.jsonl"),
     "--kv-capacity-gb", "-1", "--out", "{d}/o.csv"], outputs=["o.csv"])

# --- Kineto ------------------------------------------------------------------------------------------------
K = ["import", "--kineto", "{d}/k.json"] + IMPORT_SCENARIO + ["--out", "{d}/o.pb"]
for label, doc in [("ts near INT64_MAX", kineto([kernel_event(ts=INT64_MAX)])),
                   ("ts 9.2e15 us", kineto([kernel_event(ts=9.2e15)])),
                   ("ts -9e18", kineto([kernel_event(ts=-9e18)])),
                   ("ts 1e300", kineto([kernel_event(ts=1e300)])),
                   ("ts string huge", kineto([kernel_event(ts="9223372036854775807.5")])),
                   ("dur near INT64_MAX", kineto([kernel_event(dur=INT64_MAX // 1000)])),
                   ("dur 1e300", kineto([kernel_event(dur=1e300)])),
                   ("ts past 2^62 ns", kineto([kernel_event(ts=4.7e15, dur=2e13)])),
                   ("baseTimeNanoseconds INT64_MAX", kineto(baseTimeNanoseconds=INT64_MAX)),
                   ("baseTimeNanoseconds 1e300", kineto(baseTimeNanoseconds=1e300)),
                   ("baseTimeNanoseconds text", kineto(baseTimeNanoseconds="abc")),
                   ("nelems INT64_MAX", kineto([kernel_event(name="ncclDevKernel_AllGather_RING_LL", cat="kernel",
                        args={"device": 0, "stream": 7, "In msg nelems": INT64_MAX, "Out msg nelems": INT64_MAX, "dtype": "Float"})])),
                   ("nelems uint64", kineto([kernel_event(name="ncclDevKernel_AllGather_RING_LL",
                        args={"device": 0, "stream": 7, "In msg nelems": 2**64 - 1, "dtype": "Float"})])),
                   ("rank 2^32", kineto(distributedInfo={"rank": 2**32})),
                   ("rank -1", kineto(distributedInfo={"rank": -1})),
                   ("device id 2^40", kineto(deviceProperties=[{"id": 0, "numSms": 2**40}])),
                   ("name is a number", kineto([kernel_event(name=5)])),
                   ("device name is a number", kineto(deviceProperties=[{"id": 0, "name": 7}])),
                   ("ts missing", kineto([{"ph": "X", "cat": "kernel", "name": "k", "dur": 1, "args": {}}])),
                   ("ts object", kineto([kernel_event(ts={"a": 1})])),
                   ("no traceEvents", json.dumps({"x": 1})),
                   ("no activity", kineto([])),
                   ("top-level array", "[1,2]"),
                   ("truncated", kineto()[:-5]),
                   ("number overflow", '{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","ts":1e999,"dur":1}]}')]:
    case(f"kineto {label}", K, {"k.json": doc}, outputs=["o.pb"])
case("kineto truncated gzip", ["import", "--kineto", "{d}/k.json.gz"] + IMPORT_SCENARIO + ["--out", "{d}/o.pb"],
     {"k.json.gz": gzip.compress(kineto().encode())[:-10]}, outputs=["o.pb"])

# --- nsys --------------------------------------------------------------------------------------------------
N = ["import", "--nsys", "{d}/n.sqlite"] + IMPORT_SCENARIO + ["--out", "{d}/o.pb"]
for label, sql in [("start +9e18", "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 9000000000000000000, end = 9100000000000000000;"),
                   ("start -9e18", "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = -9000000000000000000;"),
                   ("end +9.2e18", "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = 9200000000000000000;"),
                   ("start text", "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 'abc';"),
                   ("start real 1e300", "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 1e300;"),
                   ("no tables", "DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL; DROP TABLE IF EXISTS CUPTI_ACTIVITY_KIND_MEMCPY; "
                                 "DROP TABLE IF EXISTS CUPTI_ACTIVITY_KIND_MEMSET; DROP TABLE IF EXISTS NVTX_EVENTS; "
                                 "DROP TABLE IF EXISTS CUPTI_ACTIVITY_KIND_RUNTIME;")]:
    case(f"nsys {label}", N, {"n.sqlite": ("nsys", sql)}, outputs=["o.pb"])
case("nsys not sqlite", N, {"n.sqlite": "not a database"}, outputs=["o.pb"])

# --- traces ------------------------------------------------------------------------------------------------
def flipped(offset):
    b = bytearray(gzip.decompress(open(MEASURED, "rb").read()))
    b[offset] ^= 0x40
    return bytes(b)

for label, data in [("flipped byte 40", ("flip", 40)), ("flipped byte 300", ("flip", 300)), ("flipped last byte", ("flip", -1)),
                    ("truncated", ("cut", 200)), ("empty", b""), ("wrong magic", b"DCPTRC9\nxxxx"),
                    ("garbage record v1", b"DCPTRC1\n\x05hello"), ("garbage record v2", b"DCPTRC2\n\x05hello\x00\x00\x00\x00"),
                    ("huge length", b"DCPTRC2\n\xff\xff\xff\xff\x0f"), ("overlong varint", b"DCPTRC1\n" + b"\xff" * 11)]:
    case(f"export trace {label}", ["export", "--chrome", "{d}/o.json", "{d}/t.pb"], {"t.pb": data}, outputs=["o.json"])
case("validate flipped trace", ["validate", "--measured", "{d}/t.pb", "--profile", "h200-sxm"], {"t.pb": ("flip", 500)})
case("calibrate flipped trace", ["calibrate", "--measured", "{d}/t.pb", "--profile", "h200-sxm", "--out", "{d}/o.json"],
     {"t.pb": ("flip", 500)}, outputs=["o.json", "o.calibration.json"])
case("export v1 trace flipped length", ["export", "--chrome", "{d}/o.json", "{d}/t.pb"], {"t.pb": ("flip1", 8)},
     outputs=["o.json"])
case("export missing input", ["export", "--chrome", "{d}/o.json", "{d}/none.pb"], outputs=["o.json"])
case("export directory input", ["export", "--chrome", "{d}/o.json", "{d}"], outputs=["o.json"])

# --- profiles: physical bounds and types ---------------------------------------------------------------------
P = SIM + ["--profile", "{d}/p.json"]
for label, path, value in [("nvlink bandwidth 1e300", ["nvlink", "bandwidth", "value"], 1e300),
                           ("hbm bandwidth 1e20 TB/s", ["gpu", "hbm_bandwidth_measured", "value"], 1e20),
                           ("sm_count 1e18", ["gpu", "sm_count", "value"], 1e18),
                           ("gpus per domain 1e12", ["topology", "gpus_per_nvlink_domain", "value"], 1e12),
                           ("gpus per node 1e12", ["topology", "gpus_per_node", "value"], 1e12),
                           ("hop latency 1e6 s", ["nvlink", "hop_latency", "value"], 1e12),
                           ("l2 size 1e30", ["gpu", "l2_size", "value"], 1e30),
                           ("negative bandwidth", ["nvlink", "bandwidth", "value"], -1),
                           ("zero bandwidth", ["nvlink", "bandwidth", "value"], 0),
                           ("string value", ["nvlink", "bandwidth", "value"], "fast"),
                           ("null value", ["nvlink", "bandwidth", "value"], None),
                           ("bad unit", ["nvlink", "bandwidth", "unit"], "furlongs"),
                           ("fractional sm_count", ["gpu", "sm_count", "value"], 1.5),
                           ("section not object", ["nvlink"], 5)]:
    case(f"profile {label}", P, {"p.json": profile(setp(path, value))})
# vLLM's Triton MLA section (attention.triton_mla) of the RTX PRO 6000 profile, its table paths made absolute.
def rtx_profile(edit):
    here = os.path.join(SRC, "models", "profiles")
    p = json.load(open(os.path.join(here, "rtx-pro-6000.json")))
    p["comm_tables"] = [os.path.join(here, t) for t in p["comm_tables"]]
    edit(p)
    return json.dumps(p)
for label, path, value in [("sm120_fp8_table 2", ["attention", "triton_mla", "sm120_fp8_table", "value"], 2),
                           ("block_h 0", ["attention", "triton_mla", "block_h", "value"], 0),
                           ("split_target 1.5", ["attention", "triton_mla", "split_target", "value"], 1.5),
                           ("tensor_rate 0", ["attention", "triton_mla", "tensor_rate", "value"], 0),
                           ("not an object", ["attention", "triton_mla"], 8)]:
    case(f"profile triton_mla {label}", P, {"p.json": rtx_profile(setp(path, value))})
case("profile triton_mla without tensor_rate", P,
     {"p.json": rtx_profile(lambda p: p["attention"]["triton_mla"].pop("tensor_rate"))})
case("profile number overflow", P, {"p.json": open(PROFILE).read().replace('"value": 450', '"value": 1e999', 1)})
case("profile not json", P, {"p.json": "{"})
case("profile top-level array", P, {"p.json": "[]"})
case("profile missing file", SIM + ["--profile", "{d}/none.json"])
case("profiles --show unknown", ["profiles", "--show", "no-such-profile"])

# --- merge JSON --------------------------------------------------------------------------------------------
M = ["merge", "--input", "{d}/p.json", "--out", "{d}/o.json"]
for label, doc in [("ragged", {"lse": [[[0.0]], [[0.0]]], "out": [[[[1.0]]], [[[1.0, 2.0]]]]}),
                   ("string value", {"lse": [[["x"]]], "out": [[[[1.0]]]]}),
                   ("rank mismatch", {"lse": [[[0.0]]], "out": [[[[1.0]]], [[[1.0]]]]}),
                   ("missing out", {"lse": [[[0.0]]]}), ("empty", {"lse": [], "out": []}),
                   ("not object", [1]), ("bool lse", {"lse": [[[True]]], "out": [[[[1.0]]]]})]:
    case(f"merge {label}", M, {"p.json": json.dumps(doc)}, outputs=["o.json"])
case("merge number overflow", M, {"p.json": '{"lse":[[[1e999]]],"out":[[[[1.0]]]]}'}, outputs=["o.json"])
case("merge --base 3", M + ["--base", "3"], {"p.json": json.dumps({"lse": [[[0.0]]], "out": [[[[1.0]]]]})}, outputs=["o.json"])

# --- contexts files ----------------------------------------------------------------------------------------
C = ["simulate", "--contexts-file", "{d}/c.txt"]
for label, text in [("huge", str(INT64_MAX)), ("negative", "-5"), ("nan", "nan"), ("garbage", "12x"), ("empty", "# none\n"),
                    ("2^40+1", str(2**40 + 1)), ("float", "1.5")]:
    case(f"contexts file {label}", C, {"c.txt": text + "\n"})
case("contexts file missing", ["simulate", "--contexts-file", "{d}/none.txt"])

# --- NaN and nonsense flags ----------------------------------------------------------------------------------
case("validate --max-median-err nan", ["validate", "--measured", MEASURED, "--profile", "h200-sxm", "--max-median-err", "nan"])
case("validate --max-median-err=NaN", ["validate", "--measured", MEASURED, "--profile", "h200-sxm", "--max-median-err=NaN"])
case("validate --max-median-err -1", ["validate", "--measured", MEASURED, "--profile", "h200-sxm", "--max-median-err", "-1"])
case("calibrate --max-std-error nan", ["calibrate", "--measured", MEASURED, "--profile", "h200-sxm", "--out", "{d}/o.json",
     "--max-std-error", "nan"], outputs=["o.json", "o.calibration.json"])
case("calibrate --hold-out 1", ["calibrate", "--measured", MEASURED, "--profile", "h200-sxm", "--out", "{d}/o.json",
     "--hold-out", "1"], outputs=["o.json", "o.calibration.json"])
case("unknown subcommand", ["frobnicate"])
case("unknown flag", ["simulate", "--frobnicate"])

# --- outputs: data loss and checks before work -----------------------------------------------------------------
case("replay --out = --requests", ["replay", "--requests", "{d}/r.jsonl", "--out", "{d}/r.jsonl"],
     {"r.jsonl": open(os.path.join(DATA, "mooncake_conversation_trace.head20.jsonl")).read()})
case("replay --out = ./--requests", ["replay", "--requests", "{d}/r.jsonl", "--out", "{d}/./sub/../r.jsonl"],
     {"r.jsonl": open(os.path.join(DATA, "mooncake_conversation_trace.head20.jsonl")).read(), "sub/x": ""})
case("replay --out symlink to --requests", ["replay", "--requests", "{d}/r.jsonl", "--out", "{d}/link.jsonl"],
     {"r.jsonl": open(os.path.join(DATA, "mooncake_conversation_trace.head20.jsonl")).read(), "link.jsonl": ("symlink", "r.jsonl")})
case("replay --plot = --out", ["replay", "--requests", os.path.join(DATA, "mooncake_conversation_trace.head20.jsonl"),
     "--out", "{d}/o.csv", "--plot", "{d}/o.csv"], outputs=["o.csv"])
case("calibrate --out = --measured", ["calibrate", "--measured", "{d}/m.pb", "--profile", "h200-sxm", "--out", "{d}/m.pb"],
     {"m.pb": ("copy", MEASURED)}, outputs=["m.calibration.json"])
case("calibrate --out = --profile", ["calibrate", "--measured", MEASURED, "--profile", "{d}/p.json", "--out", "{d}/p.json"],
     {"p.json": open(PROFILE).read()}, outputs=["p.calibration.json"])
case("calibrate sidecar = --profile", ["calibrate", "--measured", MEASURED, "--profile", "{d}/o.calibration.json", "--out", "{d}/o.json"],
     {"o.calibration.json": open(PROFILE).read()}, outputs=["o.json"])
case("calibrate sidecar unwritable", ["calibrate", "--measured", MEASURED, "--profile", "h200-sxm", "--out", "{d}/o.json"],
     {"o.calibration.json/x": ""}, outputs=["o.json"])
case("export --chrome = input", ["export", "--chrome", "{d}/t.pb", "{d}/t.pb"], {"t.pb": ("copy", MEASURED)})
case("import without the scenario", ["import", "--kineto", "{d}/k.json", "--out", "{d}/o.pb"], {"k.json": kineto()},
     outputs=["o.pb"])
case("import with part of the scenario", ["import", "--kineto", "{d}/k.json", "--dcp", "2", "--out", "{d}/o.pb"],
     {"k.json": kineto()}, outputs=["o.pb"])
case("import --scenario and flags", ["import", "--kineto", "{d}/k.json", "--scenario", "{d}/s.json", "--dcp", "2", "--out",
     "{d}/o.pb"], {"k.json": kineto(), "s.json": "{}"}, outputs=["o.pb"])
for label, text in [("not JSON", "{"), ("missing fields", '{"dcp": 2}'), ("unknown field", '{"dcp": 2, "colour": 1}'),
                    ("bad contexts", '{"dcp": 2, "heads": 16, "head_dim": 512, "kv_heads": 1, "contexts": [-1], "strategy": "ag-rs"}'),
                    ("bad heads", '{"dcp": 2, "heads": 15, "head_dim": 512, "kv_heads": 1, "batch": 1, "context": 8, "strategy": "ag-rs"}'),
                    ("deep", deep(100000))]:
    case(f"import --scenario {label}", ["import", "--kineto", "{d}/k.json", "--scenario", "{d}/s.json", "--out", "{d}/o.pb"],
         {"k.json": kineto(), "s.json": text}, outputs=["o.pb"])
for label, text in [("not an object", '["attention"]'), ("unknown phase", '{"gemm": "mlp"}'), ("aggregate", '{"gemm": "step"}'),
                    ("empty text", '{"": "attention"}'), ("number", '{"gemm": 3}')]:
    case(f"import --phase-map {label}", ["import", "--kineto", "{d}/k.json"] + IMPORT_SCENARIO +
         ["--phase-map", "{d}/m.json", "--out", "{d}/o.pb"], {"k.json": kineto(), "m.json": text}, outputs=["o.pb"])
case("import --out = --kineto", ["import", "--kineto", "{d}/k.json"] + IMPORT_SCENARIO + ["--out", "{d}/k.json"], {"k.json": kineto()})
case("import --out = --nsys", ["import", "--nsys", "{d}/n.sqlite"] + IMPORT_SCENARIO + ["--out", "{d}/n.sqlite"], {"n.sqlite": ("nsys", "")})
case("merge --out = --input", ["merge", "--input", "{d}/p.json", "--out", "{d}/p.json"],
     {"p.json": json.dumps({"lse": [[[0.0]]], "out": [[[[1.0]]]]})})
case("validate --report = --measured", ["validate", "--measured", "{d}/m.pb", "--profile", "h200-sxm", "--report", "{d}/m.pb"],
     {"m.pb": ("copy", MEASURED)})
case("validate --csv = --report", ["validate", "--measured", MEASURED, "--profile", "h200-sxm", "--report", "{d}/r.md", "--csv", "{d}/r.md"],
     outputs=["r.md"])
case("validate --plot directory", ["validate", "--measured", MEASURED, "--profile", "h200-sxm", "--report", "{d}/r.md",
     "--csv", "{d}/r.csv", "--plot", "{d}/plotdir"], {"plotdir/x": ""}, outputs=["r.md", "r.csv"])
case("validate --report missing dir", ["validate", "--measured", MEASURED, "--profile", "h200-sxm", "--report", "{d}/no/r.md",
     "--csv", "{d}/r.csv"], outputs=["r.csv"])
case("simulate --out = --chrome", ["simulate", "--batch", "2", "--context", "1k", "--out", "{d}/x", "--chrome", "{d}/x"], outputs=["x"])
case("simulate --json = --profile", ["simulate", "--batch", "2", "--context", "1k", "--profile", "{d}/p.json", "--json", "{d}/p.json"],
     {"p.json": open(PROFILE).read()})
case("simulate --out directory", ["simulate", "--batch", "2", "--context", "1k", "--out", "{d}/dir"], {"dir/x": ""})
case("simulate --out missing dir", ["simulate", "--batch", "2", "--context", "1k", "--out", "{d}/no/o.pb"])
case("simulate --out /dev/null", ["simulate", "--batch", "2", "--context", "1k", "--out", "/dev/null"])
case("scan --out directory", ["scan", "--dcp", "2", "--batch", "1", "--context", "1k", "--out", "{d}/dir"], {"dir/x": ""})
case("scan --out = --contexts-file", ["scan", "--dcp", "2", "--contexts-file", "{d}/c.txt", "--out", "{d}/c.txt"], {"c.txt": "1024\n"})
case("scan --plot = --out", ["scan", "--dcp", "2", "--batch", "1", "--context", "1k", "--out", "{d}/o.csv", "--plot", "{d}/o.csv"],
     outputs=["o.csv"])
case("scan --plot directory", ["scan", "--dcp", "2", "--batch", "1", "--context", "1k", "--out", "{d}/o.csv", "--plot", "{d}/pd"],
     {"pd/x": ""}, outputs=["o.csv"])
case("replay --out directory", ["replay", "--requests", os.path.join(DATA, "mooncake_conversation_trace.head20.jsonl"),
     "--out", "{d}/dir"], {"dir/x": ""})
case("replay --plot directory", ["replay", "--requests", os.path.join(DATA, "mooncake_conversation_trace.head20.jsonl"),
     "--out", "{d}/o.csv", "--plot", "{d}/pd"], {"pd/x": ""}, outputs=["o.csv"])
case("merge --out directory", ["merge", "--input", "{d}/p.json", "--out", "{d}/dir"],
     {"p.json": json.dumps({"lse": [[[0.0]]], "out": [[[[1.0]]]]}), "dir/x": ""})
case("import --out missing dir", ["import", "--kineto", "{d}/k.json"] + IMPORT_SCENARIO + ["--out", "{d}/no/o.pb"], {"k.json": kineto()})
case("hw run --out directory", ["hw", "run", "--out", "{d}/dir"], {"dir/x": ""})

# --- models, whole-model steps, ranges and consistency -------------------------------------------------------
HEAD20 = os.path.join(DATA, "mooncake_conversation_trace.head20.jsonl")
RP = ["replay", "--requests", HEAD20, "--out", "{d}/o.csv"]
for flag, value in [("--kv-block", "0"), ("--jobs", "0"), ("--jobs", "5000"), ("--check-every", "-1"),
                    ("--model", "gpt-9"), ("--tp", "3"), ("--tp", "4"), ("--layers", "-1"),
                    ("--non-attention-us", "-5"), ("--non-attention-us", "nan"), ("--non-attention-us-per-token", "inf"),
                    ("--gpu-memory-utilization", "0"), ("--gpu-memory-utilization", "1.5"), ("--weight-reserve-gib", "-1"),
                    ("--strategy", "ag-rs,bogus"), ("--strategies", "bogus"), ("--weight-reserve-gib", "200")]:
    case(f"replay {flag} {value}", RP + [flag, value], outputs=["o.csv"])
case("simulate --disable-custom-all-reduce without the op model",
     ["simulate", "--model", "kimi-k2", "--non-attention-us", "100", "--disable-custom-all-reduce", "--batch", "1"])
case("replay --summary = --out", RP + ["--summary", "{d}/o.csv"], outputs=["o.csv"])
case("replay --cdf directory", RP + ["--cdf", "{d}/dir"], {"dir/x": ""}, outputs=["o.csv"])
case("replay --summary missing dir", RP + ["--summary", "{d}/no/s.json"], outputs=["o.csv"])
case("replay --model file bad", RP + ["--model", "{d}/m.json"], {"m.json": '{"format": "dcpsim-model/1"}'}, outputs=["o.csv"])
case("replay --model file deep", RP + ["--model", "{d}/m.json"], {"m.json": deep(100000)}, outputs=["o.csv"])
for flag, value in [("--model", "gpt-9"), ("--tp", "3"), ("--tp", "0"), ("--dcp", "16 --tp 8"), ("--layers", "-2"),
                    ("--non-attention-us", "-1"), ("--gpu-memory-utilization", "nan"), ("--strategy", "all,bogus")]:
    case(f"simulate {flag} {value}", ["simulate", "--batch", "2", "--context", "1k", flag] + value.split())
S = ["scan", "--batch", "1", "--context", "1k", "--out", "{d}/o.csv"]
for flag, value in [("--dcp", "5..1"), ("--dcp", "1..1000000"), ("--dcp", "1..8:x1"), ("--dcp", "1..8:0"), ("--dcp", "..8"),
                    ("--context", "1k..1x"), ("--batch", "1..abc"), ("--model", "gpt-9"), ("--tp", "0"), ("--tp", "x"),
                    ("--heads", "1..70000"), ("--layers", "-3"), ("--gpu-memory-utilization", "2")]:
    case(f"scan {flag} {value}", S + [flag, value], outputs=["o.csv"])
case("scan every combination skipped", S + ["--dcp", "16", "--tp", "8"], outputs=["o.csv"])
case("profiles --model unknown", ["profiles", "--model", "gpt-9"])
case("profiles --tp 0", ["profiles", "--tp", "0"])
case("merge --out-dtype int8", ["merge", "--input", "{d}/p.json", "--out", "{d}/o.json", "--out-dtype", "int8"],
     {"p.json": json.dumps({"lse": [[[0.0]]], "out": [[[[1.0]]]]})}, outputs=["o.json"])
case("merge --dtype int8 (old spelling)", ["merge", "--input", "{d}/p.json", "--out", "{d}/o.json", "--dtype", "int8"],
     {"p.json": json.dumps({"lse": [[[0.0]]], "out": [[[[1.0]]]]})}, outputs=["o.json"])
HW_INPUT = [("hw run --strategy row-stream", ["hw", "run", "--strategy", "row-stream", "--out", "{d}/m.pb"], ["m.pb"]),
            ("hw run --strategy ag-rs,row-stream", ["hw", "run", "--strategy", "ag-rs,row-stream"], []),
            ("hw run --model gpt-9", ["hw", "run", "--model", "gpt-9"], []),
            ("hw run --reps 0", ["hw", "run", "--reps", "0"], []),
            ("hw bench --context 12x", ["hw", "bench", "--op", "attention", "--context", "12x"], []),
            ("hw bench --context -1", ["hw", "bench", "--op", "attention", "--context", "-1"], []),
            ("hw bench --copy-bytes 0", ["hw", "bench", "--op", "copy", "--copy-bytes", "0"], []),
            ("hw bench --copy-bytes 2t", ["hw", "bench", "--op", "copy", "--copy-bytes", "2t"], []),
            ("hw bench --op bogus", ["hw", "bench", "--op", "bogus"], [])]
for name, argv, outs in HW_INPUT:
    case(name, argv, outputs=outs, code=2)
case("hw devices without a GPU", ["hw", "devices"], code=1)


# Issue 36's cases (inputs overwritten, directories as files, JSON types, impossible profiles, mismatched
# sidecars, decompression bombs, memory estimates): tests/cli/bad_inputs_reliability.py.
import bad_inputs_reliability  # noqa: E402 (it takes this table's helpers)
bad_inputs_reliability.add(case, globals())
bad_inputs_reliability.add_matrix(case, globals())
import bad_inputs_comm  # noqa: E402 (issues 32 and 33's commands)
bad_inputs_comm.add(case, globals())


def materialise(d, files):
    for rel, content in files.items():
        path = os.path.join(d, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if isinstance(content, tuple):
            kind, arg = content
            if kind == "nsys":
                nsys_db(path, arg)
            elif kind == "copy":
                shutil.copyfile(arg, path)
            elif kind == "symlink":
                os.symlink(arg, path)
            elif kind == "hardlink":
                os.link(os.path.join(d, arg), path)
            elif kind == "dir":
                os.makedirs(path, exist_ok=True)
            elif kind == "gzforge":  # (text, size the trailer claims): a gzip member with a forged ISIZE
                text, claim = arg  # text: bytes that do not compress, so the claim stays within 1032:1
                raw = bytearray(gzip.compress(text if isinstance(text, bytes) else text.encode(), compresslevel=1))
                raw[-4:] = (claim % 2**32).to_bytes(4, "little")
                open(path, "wb").write(bytes(raw))
            elif kind == "gzbomb":  # (prefix, filler bytes, suffix), one gzip member per 16 MiB of filler
                prefix, size, suffix = arg
                chunk = gzip.compress(b" " * (16 << 20), compresslevel=1)
                with open(path, "wb") as f:
                    f.write(gzip.compress(prefix if isinstance(prefix, bytes) else prefix.encode()))
                    for _ in range(size // (16 << 20)):
                        f.write(chunk)
                    f.write(gzip.compress(suffix.encode()))
            elif kind == "flip":
                b = bytearray(v2_trace())
                b[arg] ^= 0x40
                open(path, "wb").write(bytes(b))
            elif kind == "flip1":
                b = bytearray(gzip.decompress(open(MEASURED, "rb").read()))
                b[arg] ^= 0x40
                open(path, "wb").write(bytes(b))
            elif kind == "sparse":  # a file of `arg` bytes that takes no disk
                with open(path, "wb") as f:
                    f.truncate(arg)
            elif kind == "cut":
                open(path, "wb").write(open(MEASURED, "rb").read()[:arg])
        else:
            open(path, "wb").write(content if isinstance(content, bytes) else content.encode())


def snapshot(d):
    out = {}
    for root, dirs, files in os.walk(d):
        for f in files:
            p = os.path.join(root, f)
            out[os.path.relpath(p, d)] = "link" if os.path.islink(p) else hashlib.sha256(open(p, "rb").read()).hexdigest()
    return out


def run_case(c):
    d = tempfile.mkdtemp(prefix="dcpsim-bad-")
    try:
        materialise(d, c["files"])
        before = snapshot(d)
        argv = [a.replace("{d}", d) for a in c["argv"]]
        env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0")
        t0 = time.time()
        try:
            p = subprocess.run([DCPSIM] + argv, capture_output=True, timeout=c["timeout"], env=env, cwd=d)
        except subprocess.TimeoutExpired:
            return "timed out"
        errs = []
        if p.returncode not in (1, 2) or (c["code"] is not None and p.returncode != c["code"]):
            errs.append(f"exit {p.returncode}, expected {c['code']}")
        lines = p.stderr.decode(errors="replace").splitlines()
        if len(lines) != 1:
            errs.append(f"{len(lines)} stderr lines: {lines[:4]}")
        after = snapshot(d)
        for rel, h in before.items():
            if after.get(rel) != h:
                errs.append(f"input {rel} changed")
        for rel in after:
            if rel not in before:
                errs.append(f"left {rel}")
        for rel in c["outputs"]:
            if os.path.exists(os.path.join(d, rel)) and rel not in before:
                errs.append(f"output {rel} exists")
        if os.environ.get("BAD_INPUTS_VERBOSE"):
            print(f"{c['name']}: exit {p.returncode} in {time.time() - t0:.2f} s: {lines[-1] if lines else ''}", flush=True)
        return "; ".join(errs) + (f" | stderr: {lines[-1][:200]}" if errs and lines else "")
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main():
    # hw run is a stub without CUDA: its cases exit 2 with "built without CUDA"; with CUDA but no GPU they exit
    # 1 or 2; either way one line.
    # Input errors in hw commands are found before any device is touched, so they exit 2 everywhere; a case
    # that needs the device to fail (or has no CUDA) may also exit 1. `hw devices` without a GPU exits 1.
    for c in CASES:
        if c["argv"][0] == "hw" and c["name"] not in {n for n, _, _ in HW_INPUT} and c["argv"][1] != "devices":
            c["code"] = None
    if FILTER == "--list":
        for c in CASES:
            print(c["name"])
        return 0
    failures = 0
    count = 0
    start = os.environ.get("BAD_INPUTS_START", "")
    started = not start
    chosen = []
    for c in CASES:
        started = started or c["name"].startswith(start)
        if started and not (FILTER and FILTER not in c["name"]):
            chosen.append(c)
    # The cases are independent (each has its own scratch directory): run them on every core.
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        for c, why in zip(chosen, pool.map(run_case, chosen)):
            count += 1
            if why:
                failures += 1
                print(f"FAIL {c['name']}: {why}")
    print(f"{count - failures}/{count} bad inputs handled")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
