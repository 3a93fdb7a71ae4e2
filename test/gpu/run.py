#!/usr/bin/env python3
"""The GPU suite's runner (test/gpu/README.md): builds the case programs with nvcc, runs each
case of cases.py, prints one line per case and then "N passed, N failed[, N skipped]". Exits 0
when no case failed, 1 when one did, and 77 after the one line "skipped: no GPU" when
`nvidia-smi -L` finds none. --sim BUILD runs cases 1, 8 and 9 on the simulated GPU of
test/fakecuda instead, to try the checks on a machine without one.
"""
import argparse
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, HERE)
import cases  # noqa: E402

# Run in this order: 7a and 7b last, as a process holding two profilers may hang.
CASES = [
    ("1", "cuda-c-shared", cases.case_shared),
    ("2", "cuda-c-static", cases.case_static),
    ("3", "cublas", cases.case_cublas),
    ("4", "triton", cases.case_triton),
    ("5", "cuda-graph", cases.case_graph),
    ("6", "torch-compare", cases.case_torch),
    ("8", "two-ranks", cases.case_ranks),
    ("9", "launcher", cases.case_launcher),
    ("7a", "torch-profiler-first", cases.case_both_start),
    ("7b", "torch-profiler-late", cases.case_both_late),
]
SIM_CASES = ("1", "8", "9")

# nvcc programs: source, nvcc options, libraries beyond the runtime.
PROGRAMS = {
    "gpu-app": ("gpu-app.cu", ["-cudart", "shared"], []),
    "gpu-app-static": ("gpu-app.cu", [], []),
    "gemm-app": ("gemm-app.cu", ["-cudart", "shared"], ["cublas"]),
    "graph-app": ("graph-app.cu", ["-cudart", "shared"], []),
}

# Inherited settings that would change what a case sees.
CLEAN_ENV = ("LD_PRELOAD", "NVTX_INJECTION64_PATH", "CUDA_INJECTION64_PATH", "RANK",
             "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "SLURM_PROCID",
             "SLURM_NTASKS", "PMI_RANK", "PMI_SIZE")


class Run:
    """A finished command: exit status (or "timeout"), stdout, stderr, seconds."""

    def __init__(self, rc, out, err, secs):
        self.rc, self.out, self.err, self.secs = rc, out, err, secs

    def tail(self, n=3):
        lines = [line for line in (self.err + "\n" + self.out).splitlines() if line.strip()]
        return " / ".join(lines[-n:])[-400:] or "(no output)"


class Proc:
    """A command started in a case folder, its output in <tag>.out and <tag>.err there."""

    def __init__(self, cd, tag, argv, env, timeout):
        self.cd, self.tag, self.argv, self.env, self.timeout = cd, tag, argv, env, timeout
        self.files = [os.path.join(cd, tag + ext) for ext in (".out", ".err")]
        self.start = time.time()
        with open(self.files[0], "w") as out, open(self.files[1], "w") as err:
            self.p = subprocess.Popen(argv, env=env, cwd=cd, stdout=out, stderr=err,
                                      stdin=subprocess.DEVNULL, start_new_session=True)
        self.pid = self.p.pid

    def wait(self):
        try:
            rc = self.p.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.p.pid, signal.SIGKILL)
            self.p.wait()
            rc = "timeout after %d s" % self.timeout
        texts = []
        for f in self.files:
            with open(f, errors="replace") as fh:
                texts.append(fh.read())
        run = Run(rc, texts[0], texts[1], time.time() - self.start)
        shown = {k: v for k, v in self.env.items() if k.startswith("GPROF_") or k in CLEAN_ENV
                 or k == "LD_LIBRARY_PATH"}
        with open(os.path.join(self.cd, self.tag + ".cmd"), "w") as fh:
            fh.write("%s\nenv %s\nexit %s after %.1f s\n" % (" ".join(self.argv), shown, rc,
                                                              run.secs))
        return run


class Ctx:
    """What the cases use: builds, environments, runs, the GPU's facts, shared results."""

    def __init__(self, args, gpu):
        self.lib, self.gpu = os.path.abspath(args.lib), gpu
        self.sim = os.path.abspath(args.sim) if args.sim else None
        self.out = os.path.abspath(args.out)
        self.bin = os.path.join(self.out, "bin")
        # CUDA_HOME's toolkit, else the one whose nvcc is on PATH (its lib64 for the RUNPATH).
        self.cuda = os.environ.get("CUDA_HOME") or "/usr/local/cuda"
        self.nvcc = os.path.join(self.cuda, "bin", "nvcc")
        if not os.path.exists(self.nvcc) and shutil.which("nvcc"):
            self.nvcc = os.path.realpath(shutil.which("nvcc"))
            self.cuda = os.path.dirname(os.path.dirname(self.nvcc))
        self.python = sys.executable
        self.built, self.cache, self.modules = {}, {}, {}
        os.makedirs(self.bin, exist_ok=True)

    def script(self, name):
        return os.path.join(HERE, name)

    def env(self, **extra):
        env = {k: v for k, v in os.environ.items()
               if k not in CLEAN_ENV and not k.startswith("GPROF_")}
        env["PYTHONUNBUFFERED"] = "1"
        env.update(extra)
        return env

    def gprof_env(self, out, **extra):
        """libgprof preloaded, its traces into out; libjansson may lie beside it."""
        env = self.env(LD_PRELOAD=self.lib, GPROF_OUTPUT=out, GPROF_LOG="info", **extra)
        env["LD_LIBRARY_PATH"] = ":".join(p for p in (os.path.dirname(self.lib),
                                                       env.get("LD_LIBRARY_PATH")) if p)
        if self.sim:
            env["GPROF_CUPTI_LIB"] = os.path.join(self.sim, "fakecuda", "libcupti.so.13")
        return env

    def start(self, cd, tag, argv, env, timeout=90):
        return Proc(cd, tag, argv, env, timeout)

    def run(self, cd, tag, argv, env, timeout=90):
        return self.start(cd, tag, argv, env, timeout).wait()

    def result_line(self, run, prefix):
        for line in reversed(run.out.splitlines()):
            if line.startswith(prefix):
                return json.loads(line[len(prefix):])
        return None

    def note(self, cd, text):
        with open(os.path.join(cd, "notes.txt"), "a") as fh:
            fh.write(text + "\n")

    def need_python(self, *modules):
        for m in modules:
            if m not in self.modules:
                code = "import %s" % m + ("; assert torch.cuda.is_available()"
                                          if m == "torch" else "")
                r = subprocess.run([self.python, "-c", code], capture_output=True, timeout=120)
                self.modules[m] = r.returncode == 0
            if not self.modules[m]:
                raise cases.Skip("%s cannot import %s (with a GPU)" % (self.python, m))

    def build(self, name):
        if name not in self.built:
            src, opts, libs = PROGRAMS[name]
            exe = os.path.join(self.bin, name)
            if self.sim:
                cmds = self.sim_commands(src, exe)
            else:
                link = ["-Xlinker", "-rpath", "-Xlinker", os.path.join(self.cuda, "lib64")]
                for lib in libs:
                    link += self.find_lib(lib)
                cmds = [[self.nvcc, "-O2"] + opts + ["-o", exe, os.path.join(HERE, src)]
                        + link + ["-ldl"]]
            for cmd in cmds:
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
                with open(os.path.join(self.bin, name + ".build.log"), "a") as fh:
                    fh.write(" ".join(cmd) + "\n" + r.stdout + r.stderr)
                if r.returncode:
                    raise cases.Fail("building %s: %s" % (name, (r.stderr or r.stdout)[-400:]))
            self.built[name] = exe
        return self.built[name]

    def sim_commands(self, src, exe):
        """nvcc compiles; the C compiler links against the simulated runtime (apps.mk)."""
        fake = os.path.join(self.sim, "fakecuda")
        return [[self.nvcc, "-cudart", "shared", "-O2", "-c", "-o", exe + ".o",
                 os.path.join(HERE, src)],
                [os.environ.get("CC", "cc"), "-o", exe, exe + ".o", "-Wl,-rpath," + fake,
                 "-L" + fake, "-l:libcudart.so.13", "-lstdc++", "-ldl", "-lpthread"]]

    def find_lib(self, lib):
        """Link options for lib: the toolkit's, else a pip package's (nvidia/*/lib)."""
        if glob.glob(os.path.join(self.cuda, "lib64", "lib%s.so" % lib)):
            return ["-l" + lib]
        for d in sys.path:
            for so in sorted(glob.glob(os.path.join(d, "nvidia", "*", "lib", "lib%s.so*" % lib))):
                libdir = os.path.dirname(so)
                inc = os.path.join(os.path.dirname(libdir), "include")
                return ["-I", inc, "-L", libdir, "-l:" + os.path.basename(so), "-Xlinker",
                        "-rpath", "-Xlinker", libdir]
        raise cases.Skip("no lib%s.so in %s/lib64 or in Python's nvidia packages" % (lib,
                                                                                    self.cuda))


def find_gpu():
    """The first GPU's name, memory (MiB) and driver, or None without one."""
    try:
        r = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60)
        if r.returncode or not r.stdout.strip():
            return None
        q = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version",
                            "--format=csv,noheader,nounits"], capture_output=True, text=True,
                           timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    name, mib, driver = [f.strip() for f in q.stdout.splitlines()[0].split(",")]
    return {"name": name, "mib": int(float(mib)), "driver": driver}


def versions(ctx):
    """One line on what the suite runs with."""
    nvcc = subprocess.run([ctx.nvcc, "--version"], capture_output=True, text=True)
    torch = subprocess.run([ctx.python, "-c", "import torch; print(torch.__version__)"],
                           capture_output=True, text=True)
    gpu = ("%(name)s, %(mib)d MiB, driver %(driver)s" % ctx.gpu if ctx.gpu
           else "the simulated GPU (%s)" % ctx.sim)
    return "on %s; nvcc %s; torch %s; libgprof %s" % (
        gpu, (nvcc.stdout.strip().splitlines() or ["?"])[-1],
        torch.stdout.strip() or "none", ctx.lib)


def run_case(ctx, cid, name, fn):
    cd = os.path.join(ctx.out, "case-" + cid)
    shutil.rmtree(cd, ignore_errors=True)
    os.makedirs(cd)
    t0 = time.time()
    try:
        if ctx.sim and cid not in SIM_CASES:
            raise cases.Skip("needs a GPU (--sim runs cases %s)" % ", ".join(SIM_CASES))
        status, msg = "ok", fn(ctx, cd)
    except cases.Skip as e:
        status, msg = "skip", str(e)
    except cases.Fail as e:
        status, msg = "FAIL", str(e)
    except Exception as e:  # a fault of the checks themselves: a failure, with its trace
        status, msg = "FAIL", "checker error %s: %s" % (type(e).__name__, e)
        ctx.note(cd, traceback.format_exc())
    line = "%-4s %-3s %s: %s (%.0f s)" % (status, cid, name, msg, time.time() - t0)
    ctx.note(cd, line)
    return status, line


def save(ctx, dest):
    """The logs, and the traces (libgprof's alone if all would pass 15 MiB), into dest."""
    logs, traces = [], []
    for d, _, names in os.walk(ctx.out):
        for n in names:
            path = os.path.join(d, n)
            if path.startswith(ctx.bin + os.sep) and not n.endswith(".log"):
                continue  # the programs
            (traces if n.endswith(".json") or n.endswith(".json.gz") else logs).append(path)
    for tar_name, paths in (("logs.tar.gz", logs), ("traces.tar.gz", traces)):
        write_tar(os.path.join(dest, tar_name), ctx.out, paths)
    if os.path.getsize(os.path.join(dest, "traces.tar.gz")) > 15 << 20:
        write_tar(os.path.join(dest, "traces.tar.gz"), ctx.out,
                  [p for p in traces if os.sep + "torch" + os.sep not in p])


def write_tar(tar_path, base, paths):
    with tarfile.open(tar_path, "w:gz") as tar:
        for path in paths:
            tar.add(path, os.path.relpath(path, base))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", default=os.environ.get("GPROF_LIB",
                                                     os.path.join(REPO, "build", "libgprof.so")))
    ap.add_argument("--out", default=os.path.join(REPO, "build", "gpu"))
    ap.add_argument("--only", help="comma-separated case ids, e.g. 1,6,7a")
    ap.add_argument("--save", help="folder for results.txt, logs.tar.gz and traces.tar.gz")
    ap.add_argument("--sim", help="a build folder with fakecuda/ (make test): simulated GPU")
    args = ap.parse_args()
    gpu = None if args.sim else find_gpu()
    if not gpu and not args.sim:
        print("skipped: no GPU")
        return 77
    if not os.path.isfile(args.lib):
        print("gpu suite: no libgprof at %s (see test/gpu/README.md)" % args.lib)
        return 1
    ctx = Ctx(args, gpu)
    only = args.only.split(",") if args.only else [c[0] for c in CASES]
    counts = {"ok": 0, "FAIL": 0, "skip": 0}
    if args.save:
        os.makedirs(args.save, exist_ok=True)
    # results.txt grows line by line: a command stopped at its time limit still leaves it.
    with open(os.path.join(args.save or ctx.out, "results.txt"), "w") as results:
        def say(line):
            print(line, flush=True)
            results.write(line + "\n")
            results.flush()

        say(versions(ctx))
        for cid, name, fn in (c for c in CASES if c[0] in only):
            status, line = run_case(ctx, cid, name, fn)
            counts[status] += 1
            say(line)
        say("%d passed, %d failed" % (counts["ok"], counts["FAIL"])
            + (", %d skipped" % counts["skip"] if counts["skip"] else ""))
    if args.save:
        save(ctx, args.save)
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
