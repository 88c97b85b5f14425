"""Issue 36's bad inputs, added to bad_inputs.py's table: every output checked against every file the command
reads (a profile's kernel tables, --model and --contexts-file, the traces of a --measured directory, sidecars;
hard links and symlinks), directories where files are needed, JSON of the wrong types, negative and absurd
values in imported events, physically impossible profiles, a sidecar of another profile, decompression bombs
and the --max-input-gb cap. Each case: exit 2 (input), one line on stderr, nothing written, inputs untouched."""
import gzip, json
import random


def add(case, g):
    PROFILE, MEASURED, DATA, SIM = g["PROFILE"], g["MEASURED"], g["DATA"], g["SIM"]
    profile, setp, kineto, kernel_event = g["profile"], g["setp"], g["kineto"], g["kernel_event"]
    IMPORT_SCENARIO = g["IMPORT_SCENARIO"]
    head20 = DATA + "/mooncake_conversation_trace.head20.jsonl"
    base = json.load(open(PROFILE))
    model = open(g["SRC"] + "/models/presets/deepseek-v3.json").read()
    table = gzip.open(g["SRC"] + "/models/tables/h200-sxm-attention.json.gz", "rt").read()
    with_table = json.dumps(dict(base, tables=["t.json"]))
    measured = ("copy", MEASURED)
    partials = json.dumps({"lse": [[[0.0]]], "out": [[[[1.0]]]]})
    sidecar = json.dumps({"format": "dcpsim-calibration/1", "profile": "h200-sxm-calibrated",
                          "base_profile": "h200-sxm", "residuals": {"all": {"sigma": 0.02}},
                          "prediction_interval": {"z": 1.96}})

    # --- inputs are sacred: every file a command reads, compared with every output ------------------------
    T = ["tables", "--measured"]
    case("tables --out = --measured file", T + ["{d}/t.pb.gz", "--out", "{d}/t.pb.gz"], {"t.pb.gz": measured})
    case("tables --out = a trace of --measured dir", T + ["{d}/m", "--out", "{d}/m/a.pb.gz"], {"m/a.pb.gz": measured})
    case("tables --out = a nested trace of --measured dir", T + ["{d}/m", "--out", "{d}/m/s/a.pb"],
         {"m/s/a.pb": measured, "m/b.pb.gz": measured})
    case("tables --out new trace in --measured dir", T + ["{d}/m", "--out", "{d}/m/new.pb"], {"m/a.pb.gz": measured})
    case("tables --out via symlink to --measured", T + ["{d}/t.pb.gz", "--out", "{d}/l.pb.gz"],
         {"t.pb.gz": measured, "l.pb.gz": ("symlink", "t.pb.gz")})
    case("tables --show directory", ["tables", "--show", "{d}/dir"], {"dir/x": ""})
    C = ["tables", "--choose-interpolation", "{d}/t.json"]
    gqa8 = gzip.open(g["SRC"] + "/models/tables/h100-sxm-attention-gqa-g8.json.gz", "rt").read()
    gemm = gzip.open(g["SRC"] + "/models/tables/h100-sxm-gemm.json.gz", "rt").read()
    case("tables --choose-interpolation --out = the input", C + ["--profile", "h100-sxm", "--out", "{d}/t.json"],
         {"t.json": gqa8})
    case("tables --choose-interpolation without --profile", C + ["--out", "{d}/o.json"], {"t.json": gqa8},
         outputs=["o.json"])
    case("tables --choose-interpolation, another GPU's profile", C + ["--profile", "h200-sxm", "--out", "{d}/o.json"],
         {"t.json": gqa8}, outputs=["o.json"])
    case("tables --choose-interpolation, no attention or merge table",
         C + ["--profile", "h100-sxm", "--out", "{d}/o.json"], {"t.json": gemm}, outputs=["o.json"])
    case("tables --choose-interpolation, unknown method in the file",
         C + ["--profile", "h100-sxm", "--out", "{d}/o.json"],
         {"t.json": gqa8.replace('"method":"mean"', '"method":"cubic"', 1)},
         outputs=["o.json"])
    case("tables --choose-interpolation with --date", C + ["--profile", "h100-sxm", "--date", "2026-12-06", "--out",
                                                         "{d}/o.json"], {"t.json": gqa8}, outputs=["o.json"])
    for seed in ["-1", "99999999999999999999999", "1e3", "0x10", ""]:
        case("hw calibrate --holdout-seed " + repr(seed), ["hw", "calibrate", "--out", "{d}/g.json", "--base",
                                                           "h100-sxm", "--dry-run", "--holdout-seed", seed])
    case("tables --choose-interpolation with --measured", C + ["--measured", "{d}/t.pb.gz", "--profile", "h100-sxm",
                                                             "--out", "{d}/o.json"],
         {"t.json": gqa8, "t.pb.gz": measured}, outputs=["o.json"])
    case("tables --measured dir without traces", T + ["{d}/m", "--out", "{d}/o.json"], {"m/x.txt": "x"},
         outputs=["o.json"])
    for cmd, out in [("simulate", "--json"), ("simulate", "--out"), ("simulate", "--chrome"), ("scan", "--out"),
                     ("scan", "--plot")]:
        argv = [cmd, "--batch", "1", "--context", "1k", "--dcp", "2", "--model", "{d}/m.json", out, "{d}/m.json"]
        if cmd == "scan" and out == "--plot":
            argv += ["--out", "{d}/o.csv"]
        case(f"{cmd} {out} = --model", argv, {"m.json": model}, outputs=["o.csv"])
    case("replay --out = --model", ["replay", "--requests", head20, "--model", "{d}/r.csv", "--out", "{d}/r.csv"],
         {"r.csv": model})
    case("replay --summary = --model", ["replay", "--requests", head20, "--model", "{d}/m.json", "--out", "{d}/o.csv",
         "--summary", "{d}/m.json"], {"m.json": model}, outputs=["o.csv"])
    case("hw run --json = --model", ["hw", "run", "--model", "{d}/m.json", "--json", "{d}/m.json"], {"m.json": model})
    case("hw run --out = --contexts-file", ["hw", "run", "--contexts-file", "{d}/c.txt", "--out", "{d}/c.txt"],
         {"c.txt": "1024\n"})
    case("import --out = --contexts-file", ["import", "--kineto", "{d}/k.json", "--dcp", "2", "--heads", "16",
         "--head-dim", "512", "--kv-heads", "1", "--contexts-file", "{d}/c.txt", "--strategy", "ag-rs", "--out",
         "{d}/c.txt"], {"k.json": kineto(), "c.txt": "1024\n"})
    case("import --out = --scenario", ["import", "--kineto", "{d}/k.json", "--scenario", "{d}/s.json", "--out", "{d}/s.json"],
         {"k.json": kineto(), "s.json": json.dumps({"dcp": 2, "heads": 16, "head_dim": 512, "kv_heads": 1, "batch": 1,
                                                     "context": 8, "strategy": "ag-rs"})})
    case("import --out = --phase-map", ["import", "--kineto", "{d}/k.json"] + IMPORT_SCENARIO +
         ["--phase-map", "{d}/m.json", "--out", "{d}/m.json"], {"k.json": kineto(), "m.json": '{"gemm": "none"}'})
    for cmd, argv in [("simulate", SIM), ("scan", ["scan", "--dcp", "2", "--batch", "1", "--context", "1k"]),
                      ("replay", ["replay", "--requests", head20]),
                      ("validate", ["validate", "--measured", MEASURED]),
                      ("calibrate", ["calibrate", "--measured", MEASURED])]:
        out = {"simulate": "--json", "scan": "--out", "replay": "--out", "validate": "--report",
               "calibrate": "--out"}[cmd]
        case(f"{cmd} {out} = a table --profile lists", argv + ["--profile", "{d}/p.json", out, "{d}/t.json"],
             {"p.json": with_table, "t.json": table}, outputs=["t.calibration.json"])
        case(f"{cmd} {out} = hard link of --profile", argv + ["--profile", "{d}/p.json", out, "{d}/h.json"],
             {"p.json": open(PROFILE).read(), "h.json": ("hardlink", "p.json")}, outputs=["h.calibration.json"])
    case("validate --report = the sidecar beside --profile", ["validate", "--measured", MEASURED, "--profile",
         "{d}/p.json", "--report", "{d}/p.calibration.json"], {"p.json": open(PROFILE).read(), "p.calibration.json": sidecar})
    case("validate --csv = --calibration", ["validate", "--measured", MEASURED, "--calibration", "{d}/c.json", "--csv",
         "{d}/c.json"], {"c.json": sidecar})
    case("merge --out symlink to --input", ["merge", "--input", "{d}/p.json", "--out", "{d}/l.json"],
         {"p.json": partials, "l.json": ("symlink", "p.json")})
    case("merge --out hard link of --input", ["merge", "--input", "{d}/p.json", "--out", "{d}/h.json"],
         {"p.json": partials, "h.json": ("hardlink", "p.json")})
    case("export --chrome hard link of input", ["export", "--chrome", "{d}/h.pb", "{d}/t.pb"],
         {"t.pb": measured, "h.pb": ("hardlink", "t.pb")})
    case("calibrate --out = --hold-out-file", ["calibrate", "--measured", MEASURED, "--hold-out-file", "{d}/h.pb.gz",
         "--out", "{d}/h.pb.gz"], {"h.pb.gz": measured}, outputs=["h.pb.calibration.json"])
    case("calibrate sidecar of --out = --measured", ["calibrate", "--measured", "{d}/o.calibration.json", "--out",
         "{d}/o.json"], {"o.calibration.json": measured}, outputs=["o.json"])

    # --- a directory where a file is needed ----------------------------------------------------------------
    for name, argv in [
            ("merge --input", ["merge", "--input", "{d}/dir", "--out", "{d}/o.json"]),
            ("replay --requests", ["replay", "--requests", "{d}/dir", "--out", "{d}/o.csv"]),
            ("simulate --profile", SIM + ["--profile", "{d}/dir"]),
            ("simulate --model", SIM + ["--model", "{d}/dir"]),
            ("simulate --contexts-file", ["simulate", "--contexts-file", "{d}/dir"]),
            ("scan --contexts-file", ["scan", "--contexts-file", "{d}/dir", "--out", "{d}/o.csv"]),
            ("import --kineto", ["import", "--kineto", "{d}/dir"] + IMPORT_SCENARIO + ["--out", "{d}/o.pb"]),
            ("import --nsys", ["import", "--nsys", "{d}/dir"] + IMPORT_SCENARIO + ["--out", "{d}/o.pb"]),
            ("import --scenario", ["import", "--kineto", "{d}/k.json", "--scenario", "{d}/dir", "--out", "{d}/o.pb"]),
            ("import --phase-map", ["import", "--kineto", "{d}/k.json"] + IMPORT_SCENARIO +
             ["--phase-map", "{d}/dir", "--out", "{d}/o.pb"]),
            ("validate --calibration", ["validate", "--measured", MEASURED, "--calibration", "{d}/dir"]),
            ("validate --profile", ["validate", "--measured", MEASURED, "--profile", "{d}/dir"]),
            ("calibrate --profile", ["calibrate", "--measured", MEASURED, "--profile", "{d}/dir", "--out", "{d}/o.json"]),
            ("calibrate --hold-out-file", ["calibrate", "--measured", MEASURED, "--hold-out-file", "{d}/dir", "--out",
                                           "{d}/o.json"]),
            ("profiles --show", ["profiles", "--show", "{d}/dir"]),
            ("hw run --contexts-file", ["hw", "run", "--contexts-file", "{d}/dir"])]:
        case(f"{name} directory", argv, {"dir/x": "", "k.json": kineto()},
             outputs=["o.json", "o.csv", "o.pb", "o.calibration.json"])

    # --- devices where files are needed (read without end), names too long for a temporary file -------------
    for name, argv in [("simulate --contexts-file", ["simulate", "--contexts-file", "/dev/zero"]),
                       ("replay --requests", ["replay", "--requests", "/dev/zero", "--out", "{d}/o.csv"]),
                       ("merge --input", ["merge", "--input", "/dev/urandom", "--out", "{d}/o.json"]),
                       ("import --kineto", ["import", "--kineto", "/dev/zero"] + IMPORT_SCENARIO + ["--out", "{d}/o.pb"]),
                       ("validate --measured", ["validate", "--measured", "/dev/zero"]),
                       ("export", ["export", "--chrome", "{d}/o.json", "/dev/urandom"]),
                       ("simulate --profile", SIM + ["--profile", "/dev/zero"])]:
        case(f"{name} /dev device", argv, outputs=["o.csv", "o.json", "o.pb"])
    long = "x" * 230 + ".csv"
    case("scan --out name too long for its temporary", ["scan", "--dcp", "2", "--batch", "1", "--context", "1k", "--out",
         "{d}/" + long])
    case("simulate --json name too long", SIM + ["--json", "{d}/" + "y" * 250])

    # --- JSON of the wrong types: one line naming the file and the JSON path -------------------------------
    K = ["import", "--kineto", "{d}/k.json"] + IMPORT_SCENARIO + ["--out", "{d}/o.pb"]
    for label, doc in [("ph is a number", kineto([kernel_event(ph=5)])),
                       ("cat is a number", kineto([kernel_event(cat=7)])),
                       ("cat is an object", kineto([kernel_event(cat={"a": 1})])),
                       ("flow cat is a number", kineto([kernel_event(), {"ph": "s", "cat": 3, "id": 1, "ts": 10,
                                                                         "pid": 0, "tid": 7}])),
                       ("device name is a list", kineto(deviceProperties=[{"id": 0, "name": ["H200"]}])),
                       ("memcpy bytes negative", kineto([kernel_event(cat="gpu_memcpy", name="Memcpy DtoD",
                                                                      args={"device": 0, "stream": 7, "bytes": -5})])),
                       ("memset bytes negative", kineto([kernel_event(cat="gpu_memset", name="Memset",
                                                                      args={"device": 0, "stream": 7, "bytes": -1})])),
                       ("memcpy bytes 2^60", kineto([kernel_event(cat="gpu_memcpy", name="Memcpy DtoD",
                                                                  args={"device": 0, "stream": 7, "bytes": 2**60})])),
                       ("memcpy bytes text", kineto([kernel_event(cat="gpu_memcpy", name="Memcpy DtoD",
                                                                  args={"device": 0, "stream": 7, "bytes": "many"})])),
                       ("nelems negative", kineto([kernel_event(name="ncclDevKernel_AllGather_RING_LL",
                                                                args={"device": 0, "stream": 7, "In msg nelems": -4,
                                                                      "dtype": "Float"})])),
                       ("nelems x dtype 2^62", kineto([kernel_event(name="ncclDevKernel_AllGather_RING_LL",
                                                                    args={"device": 0, "stream": 7,
                                                                          "In msg nelems": 2**60, "dtype": "Double"})]))]:
        case(f"kineto {label}", K, {"k.json": doc}, outputs=["o.pb"])
    N = ["import", "--nsys", "{d}/n.sqlite"] + IMPORT_SCENARIO + ["--out", "{d}/o.pb"]
    for label, sql in [("memcpy bytes negative", "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET bytes = -5;"),
                       ("memcpy bytes 2^62", "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET bytes = 4611686018427387904;"),
                       ("memcpy bytes text", "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET bytes = 'many';"),
                       ("memcpy bytes real", "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET bytes = 1e300;")]:
        case(f"nsys {label}", N, {"n.sqlite": ("nsys", sql)}, outputs=["o.pb"])
    for label, text in [("dcp is true", '{"dcp": true, "heads": 16, "head_dim": 512, "kv_heads": 1, "batch": 1, '
                                        '"context": 8, "strategy": "ag-rs"}'),
                        ("heads is a list", '{"dcp": 2, "heads": [16], "head_dim": 512, "kv_heads": 1, "batch": 1, '
                                            '"context": 8, "strategy": "ag-rs"}'),
                        ("contexts of strings", '{"dcp": 2, "heads": 16, "head_dim": 512, "kv_heads": 1, '
                                                '"contexts": ["8"], "strategy": "ag-rs"}')]:
        case(f"import --scenario {label}", ["import", "--kineto", "{d}/k.json", "--scenario", "{d}/s.json", "--out",
             "{d}/o.pb"], {"k.json": kineto(), "s.json": text}, outputs=["o.pb"])
    V = ["validate", "--measured", MEASURED, "--calibration", "{d}/c.json"]
    for label, edit in [("profile is a number", {"profile": 5}), ("sigma is text", {"residuals": {"all": {"sigma": "x"}}}),
                        ("z missing", {"prediction_interval": {}}), ("format", {"format": "other/1"})]:
        doc = dict(json.loads(sidecar), **edit)
        case(f"validate --calibration {label}", V, {"c.json": json.dumps(doc)})
    M = ["merge", "--input", "{d}/p.json", "--out", "{d}/o.json"]
    for label, doc in [("lse is an object", {"lse": {"a": 1}, "out": [[[[1.0]]]]}), ("out is a string",
                       {"lse": [[[0.0]]], "out": "x"}), ("null value", {"lse": [[[None]]], "out": [[[[1.0]]]]})]:
        case(f"merge {label}", M, {"p.json": json.dumps(doc)}, outputs=["o.json"])
    for label, edit in [("layers is text", ("config", "num_hidden_layers", "many")),
                        ("hidden size negative", ("config", "hidden_size", -1))]:
        m = json.loads(model)
        if edit[0] in m and isinstance(m[edit[0]], dict):
            m[edit[0]][edit[1]] = edit[2]
        case(f"model file {label}", SIM + ["--model", "{d}/m.json"], {"m.json": json.dumps(m)})

    # --- physically impossible profiles, refused when loaded -------------------------------------------------
    P = SIM + ["--profile", "{d}/p.json"]
    for label, path, value in [("nvlink bandwidth 1e-300", ["nvlink", "bandwidth", "value"], 1e-300),
                               ("nvlink measured 1e-300", ["nvlink", "measured_bandwidth", "value"], 1e-300),
                               ("internode bandwidth 1e-300", ["internode", "bandwidth", "value"], 1e-300),
                               ("hbm measured 1e-300", ["gpu", "hbm_bandwidth_measured", "value"], 1e-300),
                               ("hbm capacity 1e-300", ["gpu", "hbm_capacity", "value"], 1e-300),
                               ("l2 size 1e-300", ["gpu", "l2_size", "value"], 1e-300),
                               ("tensor rate 1e-300", ["attention", "tensor_rate", "value"], 1e-300),
                               ("cta bandwidth 1e-300", ["attention", "max_cta_bandwidth", "value"], 1e-300),
                               ("ll bus bandwidth 1e-300", ["nccl", "ll_max_bus_bandwidth", "value"], 1e-300)]:
        case(f"profile {label}", P, {"p.json": profile(setp(path, value))})
        case(f"scan profile {label}", ["scan", "--dcp", "2", "--batch", "1", "--context", "1k", "--profile", "{d}/p.json",
             "--out", "{d}/o.csv"], {"p.json": profile(setp(path, value))}, outputs=["o.csv"])
    case("validate profile nvlink 1e-300", ["validate", "--measured", MEASURED, "--profile", "{d}/p.json"],
         {"p.json": profile(setp(["nvlink", "bandwidth", "value"], 1e-300))})

    # --- no silent mismatch ----------------------------------------------------------------------------------
    for prof in ["gb200-nvl72", "h200-sxm", "b200"]:
        case(f"validate --profile {prof} with another profile's sidecar", ["validate", "--measured", MEASURED,
             "--profile", prof, "--calibration", "{d}/c.json", "--report", "{d}/r.md"], {"c.json": sidecar},
             outputs=["r.md"])
    case("validate sidecar beside --profile of another profile", ["validate", "--measured", MEASURED, "--profile",
         "{d}/p.json", "--report", "{d}/r.md"], {"p.json": open(PROFILE).read(), "p.calibration.json": sidecar},
         outputs=["r.md"])

    # --- decompressed inputs capped (--max-input-gb) --------------------------------------------------------
    big = 48 << 20  # 48 MiB of spaces in a few kB of gzip: over a 0.01 GB cap
    case("import kineto gzip bomb over the cap", ["import", "--kineto", "{d}/k.json.gz", "--max-input-gb", "0.01"]
         + IMPORT_SCENARIO + ["--out", "{d}/o.pb"], {"k.json.gz": ("gzbomb", ('{"traceEvents":[', big, "]}"))},
         outputs=["o.pb"])
    case("replay gzip bomb over the cap", ["replay", "--requests", "{d}/r.jsonl.gz", "--max-input-gb", "0.01", "--out",
         "{d}/o.csv"], {"r.jsonl.gz": ("gzbomb", ('{"timestamp": 1, "input_length": 5, "output_length": 1', big, "}\n"))},
         outputs=["o.csv"])
    # A trace whose first record claims 40 MB (a varint), then spaces: the reader reads the record whole.
    record = b"DCPTRC2\n" + bytes([0x80, 0xb4, 0x89, 0x13])  # 40,000,000 as a varint
    case("validate gzip bomb trace over the cap", ["validate", "--measured", "{d}/t.pb.gz", "--max-input-gb", "0.01"],
         {"t.pb.gz": ("gzbomb", (record, big, ""))})
    case("export gzip bomb trace over the cap", ["export", "--chrome", "{d}/o.json", "{d}/t.pb.gz", "--max-input-gb",
         "0.01"], {"t.pb.gz": ("gzbomb", (record, big, ""))}, outputs=["o.json"])
    case("import nsys gzip bomb over the cap", ["import", "--nsys", "{d}/n.sqlite.gz", "--max-input-gb", "0.01"]
         + IMPORT_SCENARIO + ["--out", "{d}/o.pb"], {"n.sqlite.gz": ("gzbomb", ("SQLite format 3\0", big, ""))},
         outputs=["o.pb"])
    # The default cap (at most 2 GiB) against a trailer that says 3 GiB (of 3.2 MB that do not compress: within
    # deflate's 1032:1, so the claim is believable): refused before inflating anything.
    noise = random.Random(36).randbytes(3_200_000)
    for label, argv in [("import --kineto", ["import", "--kineto", "{d}/x.gz"] + IMPORT_SCENARIO + ["--out", "{d}/o.pb"]),
                        ("replay --requests", ["replay", "--requests", "{d}/x.gz", "--out", "{d}/o.csv"]),
                        ("validate --measured", ["validate", "--measured", "{d}/x.gz"]),
                        ("export", ["export", "--chrome", "{d}/o.json", "{d}/x.gz"]),
                        ("import --nsys", ["import", "--nsys", "{d}/x.gz"] + IMPORT_SCENARIO + ["--out", "{d}/o.pb"])]:
        case(f"{label} gzip trailer claims 3 GiB", argv, {"x.gz": ("gzforge", (noise, 3 << 30))},
             outputs=["o.pb", "o.csv", "o.json"])
    for value in ["0", "-1", "nan", "abc", "1e300", ""]:
        case(f"--max-input-gb '{value}'", SIM + ["--max-input-gb", value])


def add_matrix(case, g):
    """Every input flag of every command against every way an output can collide with it, and every input and
    output flag against a directory, a device and a missing file: the guard's rules, command by command."""
    MEASURED, DATA, SIM = g["MEASURED"], g["DATA"], g["SIM"]
    kineto, IMPORT_SCENARIO = g["kineto"], g["IMPORT_SCENARIO"]
    src = open(g["PROFILE"]).read()
    model = open(g["SRC"] + "/models/presets/deepseek-v3.json").read()
    files = {"p.json": src, "m.json": model, "c.txt": "1024\n", "k.json": kineto(), "map.json": '{"gemm": "none"}',
             "t.pb.gz": ("copy", MEASURED), "r.jsonl": open(DATA + "/mooncake_conversation_trace.head20.jsonl").read(),
             "cal.json": json.dumps({"format": "dcpsim-calibration/1", "residuals": {}, "prediction_interval": {"z": 2}})}
    # command: (argv without the flags below, {input flag: file}, [output flags], {required output: file})
    commands = {
        "simulate": (SIM, {"--profile": "p.json", "--model": "m.json"}, ["--out", "--chrome", "--json"], {}),
        "scan": (["scan", "--dcp", "2", "--batch", "1", "--context", "1k"], {"--profile": "p.json", "--model": "m.json"},
                 ["--plot"], {"--out": "o.csv"}),
        "replay": (["replay"], {"--requests": "r.jsonl", "--profile": "p.json", "--model": "m.json"},
                   ["--summary", "--cdf", "--plot"], {"--out": "o.csv"}),
        "validate": (["validate"], {"--measured": "t.pb.gz", "--profile": "p.json", "--calibration": "cal.json"},
                     ["--report", "--csv", "--plot"], {}),
        "calibrate": (["calibrate"], {"--measured": "t.pb.gz", "--profile": "p.json"}, [], {"--out": "o.json"}),
        "import": (["import"] + IMPORT_SCENARIO, {"--kineto": "k.json", "--phase-map": "map.json"}, [], {"--out": "o.pb"}),
        "merge": (["merge"], {"--input": "p.json"}, [], {"--out": "o.json"}),
        "tables": (["tables"], {"--measured": "t.pb.gz"}, [], {"--out": "o.json"}),
        "hw run": (["hw", "run"], {"--model": "m.json", "--contexts-file": "c.txt"}, ["--out", "--json"], {}),
    }
    for cmd, (argv, inputs, outputs, required) in commands.items():
        def make(inp=None, out=None):
            a = list(argv)
            for flag, f in inputs.items():
                a += [flag, inp.get(flag, "{d}/" + f) if inp else "{d}/" + f]
            for flag, f in required.items():
                a += [flag, out.get(flag, "{d}/" + f) if out else "{d}/" + f]
            for flag, value in (out or {}).items():
                if flag not in required:
                    a += [flag, value]
            return a
        every_out = list(outputs) + list(required)
        for oflag in every_out:
            for iflag, f in inputs.items():
                for spelling in ["{d}/" + f, "{d}/./" + f, "{d}/sub/../" + f]:
                    case(f"matrix {cmd}: {oflag} = {iflag} as {spelling[4:]}", make(out={oflag: spelling}),
                         dict(files, **{"sub/x": ""}), outputs=["o.csv", "o.json", "o.pb"])
            for label, value in [("a directory", "{d}/sub"), ("in a missing directory", "{d}/none/o.x"),
                                 ("/dev/null", "/dev/null"), ("the directory itself", "{d}/")]:
                case(f"matrix {cmd}: {oflag} {label}", make(out={oflag: value}), dict(files, **{"sub/x": ""}),
                     outputs=["o.csv", "o.json", "o.pb"])
        for iflag in inputs:
            for label, value in [("a directory", "{d}/sub"), ("missing", "{d}/none.json"), ("/dev/zero", "/dev/zero")]:
                if cmd == "tables" and label == "a directory":
                    continue  # a --measured directory stands for its traces
                case(f"matrix {cmd}: {iflag} {label}", make(inp={iflag: value}), dict(files, **{"sub/x": ""}),
                     outputs=["o.csv", "o.json", "o.pb"])
