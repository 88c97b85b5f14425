"""The commands issues 32 and 33 added, held to the bad-input table's rules: `collectives`, `import --nccl-tests`,
`calibrate --comm-tables`, `validate/calibrate --kernels measured --only`, `plan`, `--baseline trace=FILE`,
`--pipeline-parallel-size`, `--moe-a2a-backend`, `hw calibrate` and `hw sweep --kernels gemm`. nccl-tests logs
and -J JSON malformed, cut or absurd; communication tables of the wrong types or impossible values (read as
inputs: a profile's comm_tables, --against, --comm-tables); outputs equal to any of those; absurd ranges.
Each case: exit 2 (input), one line on stderr, nothing written, inputs untouched."""
import gzip, json


def add(case, g):
    PROFILE, MEASURED, DATA, SRC = g["PROFILE"], g["MEASURED"], g["DATA"], g["SRC"]
    kineto = g["kineto"]
    logs = DATA + "/nccl-tests/"
    # A log that names its collective (nccl-tests 2.17 and later): every case fails for its own flaw.
    log = "# Collective test starting: all_gather_perf\n" + open(logs + "b200-gke-a4-2node-mpi16-allgather.log").read()
    model = open(SRC + "/models/presets/deepseek-v3.json").read()
    head20 = DATA + "/mooncake_conversation_trace.head20.jsonl"
    base = json.load(open(PROFILE))

    def comm(points=None, **table):
        t = {"op": "all-gather", "dtype": "half", "points": points if points is not None else [
            {"gpus": 2, "size_bytes": 1024, "time_us": 5}, {"gpus": 2, "size_bytes": 1048576, "time_us": 20},
            {"gpus": 4, "size_bytes": 1024, "time_us": 7}]}
        t.update(table)
        return {"format": "dcpsim-comm-tables/1", "provenance": {"device": "NVIDIA H200 SXM", "source": "test"},
                "tables": [t]}

    good = json.dumps(comm())
    with_comm = json.dumps(dict(base, tables=[], comm_tables=["c.json"]))
    with_both = json.dumps(dict(base, tables=["k.json"], comm_tables=["c.json"]))
    ktable = gzip.open(SRC + "/models/tables/h200-sxm-attention.json.gz", "rt").read()

    def nccl_json(results, **top):
        doc = {"results": results}
        doc.update(top)
        return json.dumps(doc)

    row = {"size": 1024, "count": 512, "type": "half", "out_of_place": {"time": 5.0, "algbw": 0.2, "busbw": 0.1}}

    # --- collectives: flags out of range, never a hang or an allocation sized by the user ------------------
    C = ["collectives"]
    for flag, value in [("--gpus", "0"), ("--gpus", "-2"), ("--gpus", "1e30"), ("--gpus", "2..100000000"),
                        ("--gpus", "2..64:x1"), ("--gpus", "2..64:x0"), ("--gpus", "64..2"), ("--gpus", "abc"),
                        ("--gpus", ""), ("--gpus", "2,,4"), ("--gpus", "99999999999999999999"),
                        ("--sizes", "1..1e30"), ("--sizes", "0"), ("--sizes", "-1"), ("--sizes", "1k..1e30"),
                        ("--sizes", "512..512m:x1"), ("--sizes", "512..512m:x0.5"), ("--sizes", "512..4k:xabc"), ("--sizes", "512..4k:x1e400"), ("--sizes", "nan"),
                        ("--sizes", "inf"), ("--sizes", "1..1p"), ("--sizes", "1..4096:+0"), ("--sizes", "1t"),
                        ("--sizes", "1..1099511627776:+1"), ("--op", "bogus"), ("--op", ""), ("--op", "all-gather,,"),
                        ("--dtype", "bogus"), ("--algo", "bogus"), ("--proto", "bogus"), ("--extrapolate", "bogus"),
                        ("--launch", "bogus")]:
        argv = C + [flag, value] + (["--in-step"] if flag == "--launch" else [])
        case(f"collectives {flag} '{value}'", argv, timeout=20)
    case("collectives --launch without --in-step", C + ["--launch", "eager"])
    case("collectives --per-point without --against", C + ["--per-point"])
    case("collectives --profile missing", C + ["--profile", "{d}/none.json"])
    case("collectives --csv in a missing directory", C + ["--csv", "{d}/none/o.csv"])
    case("collectives --csv a directory", C + ["--csv", "{d}/sub"], {"sub/x": ""})
    case("collectives --csv = --profile", C + ["--profile", "{d}/p.json", "--csv", "{d}/p.json"],
         {"p.json": open(PROFILE).read().replace('"../tables/', '"' + SRC + '/models/tables/')})
    case("collectives --csv = a comm table --profile lists", C + ["--profile", "{d}/p.json", "--csv", "{d}/c.json"],
         {"p.json": with_comm, "c.json": good})
    case("collectives --csv = a kernel table --profile lists", C + ["--profile", "{d}/p.json", "--csv", "{d}/k.json"],
         {"p.json": with_both, "c.json": good, "k.json": ktable})
    case("collectives --csv symlink to a comm table", C + ["--profile", "{d}/p.json", "--csv", "{d}/l.json"],
         {"p.json": with_comm, "c.json": good, "l.json": ("symlink", "c.json")})
    case("collectives --csv = --against", C + ["--against", "{d}/a.log", "--csv", "{d}/a.log"], {"a.log": log})
    case("collectives --csv = second --against", C + ["--against", "{d}/a.log", "{d}/b.log", "--csv", "{d}/b.log"],
         {"a.log": log, "b.log": log})
    case("collectives --csv hard link of --against", C + ["--against", "{d}/a.log", "--csv", "{d}/h.log"],
         {"a.log": log, "h.log": ("hardlink", "a.log")})

    # --- nccl-tests output: as --against, as import --nccl-tests, as calibrate --comm-tables ---------------
    bad_logs = [
        ("empty", ""),
        ("garbage", "\x00\x01garbage\xff" * 100),
        ("header only", log.split("#       size")[0]),
        ("cut mid-row", log[:log.index("  4096 ") + 20]),
        ("row of letters", log.replace("  280.4  ", "  abc  ", 1)),
        ("time NaN", log.replace("  280.4  ", "  nan  ", 1)),
        ("time inf", log.replace("  280.4  ", "  inf  ", 1)),
        ("time negative", log.replace("  280.4  ", " -280.4  ", 1)),
        ("time 1e308", log.replace("  280.4  ", " 1e308  ", 1)),
        ("size negative", log.replace("        1024            16", "       -1024            16", 1)),
        ("size 1e30", log.replace("        1024            16", "        1e30            16", 1)),
        ("line of 2 MB", log.replace("# nThread", "#" + "x" * (2 << 20) + "\n# nThread", 1)),
        ("json no results", nccl_json(None)),
        ("json results an object", json.dumps({"results": {"a": 1}})),
        ("json size a string", nccl_json([dict(row, size="1k")])),
        ("json size negative", nccl_json([dict(row, size=-1024)])),
        ("json time a word", nccl_json([dict(row, out_of_place={"time": "fast"})])),
        ("json time negative", nccl_json([dict(row, out_of_place={"time": -5})])),
        ("json time zero", nccl_json([dict(row, out_of_place={"time": 0})])),
        ("json time null", nccl_json([dict(row, out_of_place={"time": None})])),
        ("json time 1e400", nccl_json([row]).replace('"time": 5.0', '"time": 1e400')),
        ("json devices a string", nccl_json([row], devices="all")),
        ("json deep", '{"results":' + "[" * 100000 + "]" * 100000 + "}"),
        ("json cut", nccl_json([row, row])[:-7]),
        ("csv header only", "op,gpus,size_bytes,time_us\n"),
        ("csv gpus 0", "op,gpus,size_bytes,time_us\nall-gather,0,1024,5\n"),
        ("csv gpus 1e12", "op,gpus,size_bytes,time_us\nall-gather,1000000000000,1024,5\n"),
        ("csv time nan", "op,gpus,size_bytes,time_us\nall-gather,2,1024,nan\n"),
        ("csv time negative", "op,gpus,size_bytes,time_us\nall-gather,2,1024,-5\n"),
        ("csv size inf", "op,gpus,size_bytes,time_us\nall-gather,2,inf,5\n"),
        ("csv op unknown", "op,gpus,size_bytes,time_us\nbroadcast-ish,2,1024,5\n"),
        ("csv ragged", "op,gpus,size_bytes,time_us\nall-gather,2,1024\n"),
    ]
    ext = lambda label: ".json" if label.startswith("json") else ".csv" if label.startswith("csv") else ".log"
    for label, text in bad_logs:
        f = "in" + ext(label)
        case(f"import --nccl-tests {label}", ["import", "--nccl-tests", "{d}/" + f, "--op", "all-gather", "--gpus", "2",
             "--out", "{d}/o.json"], {f: text}, outputs=["o.json"], timeout=20)
        case(f"collectives --against {label}", ["collectives", "--against", "{d}/" + f], {f: text}, timeout=20)
    for label in ["empty", "garbage", "cut mid-row", "time NaN", "json time negative", "csv time nan"]:
        f = "in" + ext(label)
        case(f"calibrate --comm-tables {label}", ["calibrate", "--comm-tables", "{d}/" + f, "--out", "{d}/o.json"],
             {f: dict(bad_logs)[label]}, outputs=["o.json", "o.calibration.json"], timeout=20)
    I = ["import", "--nccl-tests"]
    case("import --nccl-tests --out = the log", I + ["{d}/a.log", "--out", "{d}/a.log"], {"a.log": log})
    case("import --nccl-tests --out = second log", I + ["{d}/a.log", "{d}/b.log", "--out", "{d}/b.log"],
         {"a.log": log, "b.log": log})
    case("import --nccl-tests --out via ./ spelling", I + ["{d}/a.log", "--out", "{d}/./sub/../a.log"],
         {"a.log": log, "sub/x": ""})
    case("import --nccl-tests --out symlink to the log", I + ["{d}/a.log", "--out", "{d}/l.json"],
         {"a.log": log, "l.json": ("symlink", "a.log")})
    case("import --nccl-tests missing", I + ["{d}/none.log", "--out", "{d}/o.json"], outputs=["o.json"])
    case("import --nccl-tests directory", I + ["{d}/sub", "--out", "{d}/o.json"], {"sub/x": ""}, outputs=["o.json"])
    case("import --nccl-tests /dev/zero", I + ["/dev/zero", "--out", "{d}/o.json"], outputs=["o.json"], timeout=20)
    case("import --nccl-tests 300 MB sparse", I + ["{d}/big.log", "--out", "{d}/o.json"], {"big.log": ("sparse", 300 << 20)},
         outputs=["o.json"], timeout=20)
    case("import --nccl-tests --out a directory", I + ["{d}/a.log", "--out", "{d}/sub"], {"a.log": log, "sub/x": ""})
    case("import --nccl-tests --out in a missing directory", I + ["{d}/a.log", "--out", "{d}/none/o.json"], {"a.log": log})
    case("import --nccl-tests and --kineto", I + ["{d}/a.log", "--kineto", "{d}/k.json", "--out", "{d}/o.json"],
         {"a.log": log, "k.json": kineto()}, outputs=["o.json"])
    for flag, value in [("--op", "bogus"), ("--gpus", "0"), ("--gpus", "-1"), ("--where", "nocolumn"),
                        ("--where", "=x"), ("--date", "yesterday"), ("--date", "2026-13-45")]:
        case(f"import --nccl-tests {flag} '{value}'", I + ["{d}/a.log", flag, value, "--out", "{d}/o.json"],
             {"a.log": log}, outputs=["o.json"])
    case("import --nccl-tests two GPUs' logs", I + ["{d}/a.log", "{d}/b.log", "--out", "{d}/o.json"],
         {"a.log": log, "b.log": log.replace("NVIDIA B200", "NVIDIA H100 80GB HBM3")}, outputs=["o.json"])
    case("import --op without --nccl-tests", ["import", "--kineto", "{d}/k.json", "--op", "all-gather"] +
         g["IMPORT_SCENARIO"] + ["--out", "{d}/o.pb"], {"k.json": kineto()}, outputs=["o.pb"])

    # --- communication tables: wrong types, negative, NaN, absurd values (as a profile's, --against, --comm-tables)
    P = dict(base, tables=[])
    bad_tables = [
        ("time_us NaN", json.dumps(comm()).replace('"time_us": 5', '"time_us": NaN')),
        ("time_us negative", json.dumps(comm([{"gpus": 2, "size_bytes": 1024, "time_us": -5}]))),
        ("time_us a string", json.dumps(comm([{"gpus": 2, "size_bytes": 1024, "time_us": "5"}]))),
        ("time_us 1e308", json.dumps(comm([{"gpus": 2, "size_bytes": 1024, "time_us": 1e308}]))),
        ("time_us 1e-300", json.dumps(comm([{"gpus": 2, "size_bytes": 1024, "time_us": 1e-300}]))),
        ("size_bytes 1e300", json.dumps(comm([{"gpus": 2, "size_bytes": 1e300, "time_us": 5}]))),
        ("size_bytes 1e-300", json.dumps(comm([{"gpus": 2, "size_bytes": 1e-300, "time_us": 5}]))),
        ("1 TB in 1 us", json.dumps(comm([{"gpus": 2, "size_bytes": 1e12, "time_us": 1}]))),
        ("gpus 1e7", json.dumps(comm([{"gpus": 10000000, "size_bytes": 1024, "time_us": 5}]))),
        ("gpus 2.5", json.dumps(comm([{"gpus": 2.5, "size_bytes": 1024, "time_us": 5}]))),
        ("gpus true", json.dumps(comm([{"gpus": True, "size_bytes": 1024, "time_us": 5}]))),
        ("points empty", json.dumps(comm([]))),
        ("points an object", json.dumps(comm({"a": 1}))),
        ("op a number", json.dumps(comm(op=3))),
        ("op unknown", json.dumps(comm(op="broadcast-ish"))),
        ("in_place a string", json.dumps(comm(in_place="no"))),
        ("format wrong", json.dumps(dict(comm(), format="dcpsim-comm-tables/9"))),
        ("provenance missing", json.dumps({k: v for k, v in comm().items() if k != "provenance"})),
        ("tables an object", json.dumps(dict(comm(), tables={"a": 1}))),
        ("duplicate size", json.dumps(comm([{"gpus": 2, "size_bytes": 1024, "time_us": 5},
                                            {"gpus": 2, "size_bytes": 1024, "time_us": 6}]))),
        ("deep", '{"format":' + "[" * 100000 + "]" * 100000 + "}"),
        ("not JSON", "{\"format\": "),
        ("empty", ""),
        ("a kernel table", ktable),
    ]
    # Every flaw as --against (read first, so the cheapest); the physical bounds through every reader.
    for label, text in bad_tables:
        case(f"collectives --against table {label}", ["collectives", "--against", "{d}/c.json"], {"c.json": text})
        if not label.startswith(("time_us", "size_bytes", "gpus 1e7", "1 TB")):
            continue
        case(f"profile comm table {label}", ["collectives", "--profile", "{d}/p.json"],
             {"p.json": with_comm, "c.json": text})
        case(f"calibrate --comm-tables table {label}", ["calibrate", "--comm-tables", "{d}/c.json", "--out",
             "{d}/o.json"], {"c.json": text}, outputs=["o.json", "o.calibration.json"])
    for label, entry in [("a number", 5), ("missing file", "none.json"), ("a directory", "sub"),
                         ("/dev/zero", "/dev/zero"), ("object without path", {"borrowed": "x"}),
                         ("borrowed a number", {"path": "c.json", "borrowed": 5}), ("empty path", "")]:
        doc = json.dumps(dict(P, comm_tables=[entry]))
        for cmd in [["collectives"], ["simulate", "--batch", "1", "--context", "1k"], ["plan", "--gpus", "8"]]:
            case(f"{cmd[0]} profile comm_tables entry {label}", cmd + ["--profile", "{d}/p.json"],
                 {"p.json": doc, "c.json": good, "sub/x": ""})
    case("profile comm_tables a string", ["collectives", "--profile", "{d}/p.json"],
         {"p.json": json.dumps(dict(P, comm_tables="c.json")), "c.json": good})
    case("profile comm table of another GPU", ["collectives", "--profile", "{d}/p.json"],
         {"p.json": with_comm, "c.json": good.replace("NVIDIA H200 SXM", "NVIDIA B200")})

    # --- outputs equal to a comm table a profile lists (every writing command) -------------------------------
    files = {"p.json": with_comm, "c.json": good}
    for name, argv in [("simulate --json", ["simulate", "--batch", "1", "--context", "1k", "--json", "{d}/c.json"]),
                       ("simulate --out", ["simulate", "--batch", "1", "--context", "1k", "--out", "{d}/c.json"]),
                       ("scan --out", ["scan", "--dcp", "2", "--batch", "1", "--context", "1k", "--out", "{d}/c.json"]),
                       ("replay --out", ["replay", "--requests", head20, "--out", "{d}/c.json"]),
                       ("plan --out", ["plan", "--out", "{d}/c.json"]),
                       ("plan --plot", ["plan", "--out", "{d}/o.csv", "--plot", "{d}/c.json"]),
                       ("validate --report", ["validate", "--measured", MEASURED, "--report", "{d}/c.json"]),
                       ("calibrate --out", ["calibrate", "--measured", MEASURED, "--out", "{d}/c.json"]),
                       ("calibrate --comm-tables --out", ["calibrate", "--comm-tables", "{d}/a.json", "--out",
                                                          "{d}/c.json"])]:
        case(f"{name} = a comm table --profile lists", argv + ["--profile", "{d}/p.json"],
             dict(files, **{"a.json": good}), outputs=["o.csv", "c.calibration.json"])

    # --- calibrate --comm-tables: outputs = inputs, flag conflicts ------------------------------------------
    CC = ["calibrate", "--comm-tables"]
    case("calibrate --comm-tables --out = the table", CC + ["{d}/c.json", "--out", "{d}/c.json"], {"c.json": good})
    case("calibrate --comm-tables --out = --hold-out-comm-tables", CC + ["{d}/c.json", "--hold-out-comm-tables",
         "{d}/h.json", "--out", "{d}/h.json"], {"c.json": good, "h.json": good}, outputs=["h.calibration.json"])
    case("calibrate --comm-tables sidecar of --out = the table", CC + ["{d}/o.calibration.json", "--out", "{d}/o.json"],
         {"o.calibration.json": good}, outputs=["o.json"])
    case("calibrate --comm-tables --out = --profile", CC + ["{d}/c.json", "--profile", "{d}/p.json", "--out",
         "{d}/p.json"], {"c.json": good, "p.json": with_comm})
    case("calibrate --comm-tables missing", CC + ["{d}/none.json", "--out", "{d}/o.json"], outputs=["o.json"])
    case("calibrate --comm-tables directory", CC + ["{d}/sub", "--out", "{d}/o.json"], {"sub/x": ""},
         outputs=["o.json"])
    case("calibrate --comm-tables /dev/zero", CC + ["/dev/zero", "--out", "{d}/o.json"], outputs=["o.json"], timeout=20)
    case("calibrate --comm-tables and --measured", CC + ["{d}/c.json", "--measured", MEASURED, "--out", "{d}/o.json"],
         {"c.json": good}, outputs=["o.json"])
    case("calibrate --hold-out-comm-tables alone", ["calibrate", "--measured", MEASURED, "--hold-out-comm-tables",
         "{d}/c.json", "--out", "{d}/o.json"], {"c.json": good}, outputs=["o.json", "o.calibration.json"])
    case("calibrate --comm-tables --only bogus", CC + ["{d}/c.json", "--only", "bogus", "--out", "{d}/o.json"],
         {"c.json": good}, outputs=["o.json"])

    # --- validate/calibrate --kernels measured --only --------------------------------------------------------
    for cmd in ["validate", "calibrate"]:
        out = ["--out", "{d}/o.json"] if cmd == "calibrate" else []
        for flag, value in [("--kernels", "bogus"), ("--kernels", ""), ("--only", "bogus"),
                            ("--only", ",,"), ("--fix", "bogus")]:
            if cmd == "validate" and flag == "--fix":
                continue
            case(f"{cmd} {flag} '{value}'", [cmd, "--measured", MEASURED, flag, value] + out,
                 outputs=["o.json", "o.calibration.json"])
    case("calibrate --date '2026-02-30'", ["calibrate", "--measured", MEASURED, "--date", "2026-02-30", "--out",
         "{d}/o.json"], outputs=["o.json", "o.calibration.json"])
    case("calibrate --comm-tables --fix bogus", CC + ["{d}/c.json", "--fix", "bogus", "--out", "{d}/o.json"],
         {"c.json": good}, outputs=["o.json", "o.calibration.json"])
    case("calibrate --comm-tables --kernels measured", CC + ["{d}/c.json", "--kernels", "measured", "--out",
         "{d}/o.json"], {"c.json": good}, outputs=["o.json", "o.calibration.json"])
    case("calibrate --only and --fix the same", ["calibrate", "--measured", MEASURED, "--only", "nvlink.bandwidth",
         "--fix", "nvlink.bandwidth", "--out", "{d}/o.json"], outputs=["o.json", "o.calibration.json"])

    # --- plan: absurd deployments, impossible SLOs are answers (not errors), bad flags are errors ------------
    PL = ["plan"]
    for flag, value in [("--gpus", "0"), ("--gpus", "-8"), ("--gpus", "100000000"), ("--gpus", "abc"),
                        ("--context", "0"), ("--context", "-1"), ("--context", "1e30"), ("--context", "1p"),
                        ("--concurrency", "0"), ("--concurrency", "1..1e30"), ("--concurrency", "1..4096:x1"),
                        ("--concurrency", "1..99999999999"), ("--pp", "0"), ("--pp", "-1"), ("--pp", "100000"),
                        ("--pp", "abc"), ("--strategy", "bogus"), ("--launch", "bogus"), ("--kv-dtype", "fp4"),
                        ("--slo-tpot-ms", "-1"), ("--slo-tpot-ms", "nan"), ("--slo-tokens-per-user", "-5"),
                        ("--slo-tokens-per-user", "inf"), ("--layers", "-1"), ("--non-attention-us", "-1"),
                        ("--non-attention-us", "nan"), ("--non-attention-us-per-token", "-1"),
                        ("--weight-reserve-gib", "-1"), ("--weight-reserve-gib", "1e30"),
                        ("--gpu-memory-utilization", "0"), ("--gpu-memory-utilization", "1.5"),
                        ("--gpu-memory-utilization", "nan"), ("--weight-dtype", "bogus"),
                        ("--moe-a2a-backend", "bogus"), ("--spec-tokens", "17"), ("--accept-length", "0"),
                        ("--spec-attention", "columns"), ("--activation-reserve-gib", "-1"), ("--runtime-reserve-gib", "nan"),
                        ("--max-num-batched-tokens", "0"), ("--step-overhead-us", "-1"),
                        ("--step-overhead-us", "inf"), ("--model", "gpt-9"), ("--profile", "none-such")]:
        case(f"plan {flag} '{value}'", PL + [flag, value, "--out", "{d}/o.csv"], outputs=["o.csv"], timeout=30)
    case("plan --accept-length beyond k + 1", PL + ["--spec-tokens", "1", "--accept-length", "3"])
    case("plan --accept-length without --spec-tokens", PL + ["--accept-length", "1.5"])
    case("simulate --spec-attention rows without --spec-tokens", ["simulate", "--spec-attention", "rows"])
    case("simulate --spec-attention bogus", ["simulate", "--model", "deepseek-v3", "--spec-tokens", "2",
                                             "--accept-length", "2", "--spec-attention", "bogus"])
    case("plan --moe-a2a-backend deepep-ll without --ep", PL + ["--moe-a2a-backend", "deepep-ll"])
    case("plan --plot without --out", PL + ["--plot", "{d}/o.png"], outputs=["o.png"])
    case("plan --out = --model", PL + ["--model", "{d}/m.json", "--out", "{d}/m.json"], {"m.json": model})
    case("plan --plot = --model", PL + ["--model", "{d}/m.json", "--out", "{d}/o.csv", "--plot", "{d}/m.json"],
         {"m.json": model}, outputs=["o.csv"])
    case("plan --out = --requests", PL + ["--requests", "{d}/r.jsonl", "--out", "{d}/r.jsonl"],
         {"r.jsonl": open(head20).read()})
    case("plan --out = --profile", PL + ["--profile", "{d}/p.json", "--out", "{d}/p.json"], {"p.json": with_comm,
                                                                                              "c.json": good})
    case("plan --out = --baseline trace", PL + ["--baseline", "trace={d}/k.json,tp=8,batch=1,context=1k", "--out",
                                                 "{d}/k.json"],
         {"k.json": kineto()})
    case("plan --out a directory", PL + ["--out", "{d}/sub"], {"sub/x": ""})
    case("plan --requests missing", PL + ["--requests", "{d}/none.jsonl"])
    case("plan --requests directory", PL + ["--requests", "{d}/sub"], {"sub/x": ""})
    case("plan --requests garbage", PL + ["--requests", "{d}/r.jsonl"], {"r.jsonl": "\x00\xffnot json\n"})
    case("plan --model directory", PL + ["--model", "{d}/sub"], {"sub/x": ""})

    # --- --baseline: TPOT points and engine traces -------------------------------------------------------------
    S = ["simulate", "--batch", "1", "--context", "1k"]
    at = ",tp=8,batch=1,context=1k"  # a trace baseline still names the layout it ran
    values = ["", "tpot", "tpot=", "tpot=-1ms", "tpot=nanms", "tpot=12ms,tp=0", "tpot=12ms,tp=8,batch=0",
              "tpot=12ms,tp=8,batch=1,context=-1", "tpot=1e30ms" + at, "tpot=12ms,bogus=1", "tpot=12ms,tp=8,tp=4",
              "trace=", "trace={d}/none.json" + at, "trace={d}/sub" + at, "trace=/dev/zero" + at,
              "trace={d}/g.json" + at, "trace={d}/e.json" + at, "trace={d}/n.json" + at, "trace={d}/t.pb" + at,
              "trace={d}/x.gz" + at, "tpot=12ms,trace={d}/n.json" + at]
    for cmd in [S + ["--model", "deepseek-v3"], PL]:
        for value in values if cmd is not PL else ["tpot=12ms,tp=0", "trace={d}/g.json" + at, "tpot=-1ms" + at]:
            case(f"{cmd[0]} --baseline '{value}'", cmd + ["--baseline", value],
                 {"sub/x": "", "g.json": "\x00garbage{", "e.json": "", "n.json": kineto([]),
                  "t.pb": b"DCPTRC2\n\xff\xff\xff\xff\x0f", "x.gz": ("gzforge", (b"\x00" * 1000, 3 << 30))},
                 timeout=30)
    big = 64 << 20
    case("simulate --baseline trace gzip bomb over the cap", S + ["--baseline", "trace={d}/k.json.gz" + at, "--max-input-gb",
         "0.01"], {"k.json.gz": ("gzbomb", ('{"traceEvents":[', big, "]}"))}, timeout=30)
    case("simulate --json = --baseline trace", S + ["--baseline", "trace={d}/k.json" + at, "--json", "{d}/k.json"],
         {"k.json": kineto()})
    case("simulate --out = --baseline trace", S + ["--baseline", "trace={d}/t.pb.gz" + at, "--out", "{d}/t.pb.gz"],
         {"t.pb.gz": ("copy", MEASURED)})

    # --- --pipeline-parallel-size, --moe-a2a-backend ----------------------------------------------------------
    for cmd in [S, ["scan", "--dcp", "2", "--batch", "1", "--context", "1k", "--out", "{d}/o.csv"],
                ["replay", "--requests", head20, "--out", "{d}/o.csv"]]:
        for flag, value in [("--pipeline-parallel-size", "0"), ("--pipeline-parallel-size", "-1"),
                            ("--pipeline-parallel-size", "65"), ("--pipeline-parallel-size", "abc"),
                            ("--pp", "1.5"), ("--moe-a2a-backend", "bogus"), ("--moe-a2a-backend", "")]:
            case(f"{cmd[0]} {flag} '{value}'", cmd + [flag, value], outputs=["o.csv"])
    case("simulate --pp more than the layers", S + ["--pp", "8", "--layers", "4"])
    case("simulate --moe-a2a-backend deepep-ll without --ep", S + ["--moe-a2a-backend", "deepep-ll"])

    # --- hw calibrate and hw sweep --kernels gemm: input errors before any device is touched ----------------
    HC = ["hw", "calibrate", "--base", "h100-sxm"]
    for value in ["abc", "", "-5m", "0", "0s", "1e30h", "10x", "99999999999999999999h", "nanm", "m"]:
        case(f"hw calibrate --budget '{value}'", HC + ["--budget", value, "--out", "{d}/o.json"], outputs=["o.json"])
    for flag, value in [("--device", "-1"), ("--date", "yesterday"), ("--date", "2026-02-30"), ("--base", "none-such"),
                        ("--base", "{d}/sub"), ("--out", "{d}/sub"), ("--out", "{d}/none/o.json"), ("--name", "")]:
        case(f"hw calibrate {flag} '{value.replace('{d}/', '')}'", HC + ["--out", "{d}/o.json", flag, value],
             {"sub/x": ""}, outputs=["o.json"])
    case("hw calibrate --out = --base", ["hw", "calibrate", "--base", "{d}/p.json", "--out", "{d}/p.json"],
         {"p.json": with_comm, "c.json": good})
    case("hw calibrate --out = a comm table --base lists", ["hw", "calibrate", "--base", "{d}/p.json", "--out",
         "{d}/c.json"], {"p.json": with_comm, "c.json": good})
    case("hw calibrate a table of --out = --base", ["hw", "calibrate", "--base", "{d}/my-merge.json", "--out",
         "{d}/my.json"], {"my-merge.json": open(PROFILE).read().replace('"../tables/', '"' + SRC + '/models/tables/')},
         outputs=["my.json"])
    case("hw calibrate without --out", ["hw", "calibrate", "--base", "h100-sxm"])
    HS = ["hw", "sweep", "--kernels", "gemm", "--out", "{d}/o.json"]
    for flag, value in [("--gemm-m", "0"), ("--gemm-m", "-1"), ("--gemm-m", "1e30"), ("--gemm-n", "abc"),
                        ("--gemm-k", ""), ("--gemm-k", "99999999999"), ("--gemm-dtypes", "bogus"),
                        ("--gemm-dtypes", "fp4"), ("--kernels", "gemm,bogus"), ("--kernels", "")]:
        case(f"hw sweep {flag} '{value}'", HS + [flag, value], outputs=["o.json"])
    # --kv-dtype fp8 runs on FlashInfer's FP8-KV kernels only: the rest is refused before any device work.
    HA = ["hw", "sweep", "--kernels", "attention", "--out", "{d}/o.json", "--kv-dtype"]
    for extra in [["fp8", "--attention", "dcpsim"], ["fp8", "--geometry", "gqa:5", "--heads", "20"],
                  ["fp8", "--kernels", "attention,correction"], ["fp8", "--kernels", "attention,gemm"],
                  ["fp16"], ["fp32"], ["bogus"], [""]]:
        case(f"hw sweep --kv-dtype {' '.join(extra)}", HA + extra, outputs=["o.json"])
    # --attention-prelude-write: a byte count, and only where attention is swept.
    HP = ["hw", "sweep", "--out", "{d}/o.json", "--attention-prelude-write"]
    for extra in [["-5", "--kernels", "attention"], ["8x", "--kernels", "attention"], ["", "--kernels", "attention"],
                  ["2000g", "--kernels", "attention"], ["8g", "--kernels", "attention"],
                  ["8m", "--kernels", "correction"]]:
        case(f"hw sweep --attention-prelude-write {' '.join(extra)}", HP + extra, outputs=["o.json"])
