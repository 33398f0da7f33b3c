"""orthant's Python package against what Python users install: shapely 2's
STRtree, rtree (libspatialindex) and scipy's cKDTree, side by side, one run.

Every timing runs from numpy in to numpy out: geometry construction, build,
query and conversion to arrays. Medians of --rounds rounds, the workloads
interleaved within each round so load changes hit every library alike.
Every peer's answer is checked equal to orthant's before anything is timed.

Peers: whatever shapely / rtree / scipy import. To time shapely 2 and rtree
1.4 built outside this repository, point at their site-packages:

    ORTHANT_BENCH_PEERS=/path/to/venv/lib/python3.11/site-packages \\
    SPATIALINDEX_C_LIBRARY=/path/to/libspatialindex_c.so \\
    .venv/bin/python python/bench/bench.py --rounds 5 --out python/bench/results

Without them Debian's shapely 1.8 / rtree 1.0 are used where they can be
(shapely 1.8 has no array API and is skipped). The versions run are printed.
"""
import argparse
import ctypes
import glob
import json
import os
import platform
import resource
import subprocess
import sys
import time

if os.environ.get("ORTHANT_BENCH_PEERS"):
    sys.path.insert(0, os.environ["ORTHANT_BENCH_PEERS"])
if os.environ.get("SPATIALINDEX_C_LIBRARY"):
    # libspatialindex_c needs its core library; load it from the same folder.
    for core in sorted(glob.glob(os.path.join(os.path.dirname(os.environ["SPATIALINDEX_C_LIBRARY"]), "libspatialindex.so.*"))):
        ctypes.CDLL(core, mode=ctypes.RTLD_GLOBAL)
        break

import numpy as np  # noqa: E402

import orthant  # noqa: E402

try:
    import shapely  # noqa: E402

    HAVE_SHAPELY2 = int(shapely.__version__.split(".")[0]) >= 2
except ImportError:
    shapely, HAVE_SHAPELY2 = None, False
try:
    import rtree  # noqa: E402
    from rtree import index as rindex  # noqa: E402

    HAVE_RTREE_ARRAYS = hasattr(rindex.Index, "intersection_v")
except ImportError:
    rtree, HAVE_RTREE_ARRAYS = None, False
from scipy import __version__ as scipy_version  # noqa: E402
from scipy.spatial import cKDTree  # noqa: E402

N = 100_000
WORLD2 = 575.5  # 100k squares of side U[0.5, 2]: each overlaps about 2 others
WORLD3 = 97.3  # the same density of overlaps for cubes
QSIDE2, QSIDE3 = 4.5, 3.25  # query boxes meeting about 10 boxes each


def squares(rng, n, dim, world):
    lo = rng.uniform(0, world, (n, dim))
    return np.hstack([lo, lo + rng.uniform(0.5, 2.0, (n, 1))])


def query_boxes(rng, n, dim, world, side):
    lo = rng.uniform(0, world, (n, dim))
    return np.hstack([lo, lo + side])


# ---- the peers, each from numpy in to numpy out ----------------------------------------


def shapely_boxes(b):
    return shapely.box(b[:, 0], b[:, 1], b[:, 2], b[:, 3])


def shapely_build(b):
    return shapely.STRtree(shapely_boxes(b))


def shapely_query(b, q):
    qi, ti = shapely.STRtree(shapely_boxes(b)).query(shapely_boxes(q))
    return qi, ti


def shapely_pairs(b):
    g = shapely_boxes(b)
    i, j = shapely.STRtree(g).query(g)
    keep = i < j
    return np.stack([i[keep], j[keep]], axis=1)


def shapely_nearest1(b, p):
    tree = shapely.STRtree(shapely_boxes(b))
    (pi, ti), d = tree.query_nearest(shapely.points(p), return_distance=True, all_matches=False)
    return d, ti


def rtree_props(dim):
    p = rindex.Property()
    p.dimension = dim
    p.leaf_capacity = 16
    p.index_capacity = 16
    return p


def rtree_build(b):
    dim = b.shape[1] // 2
    return rindex.Index((np.arange(len(b), dtype=np.int64), b[:, :dim].copy(), b[:, dim:].copy()), properties=rtree_props(dim))


def rtree_intersection_v(idx, mins, maxs):
    """rtree 1.4.1's Index.intersection_v, its loop as written there, with one
    fix: under numpy < 2 its resize size comes out as a float (uint64 + int)
    and raises, whenever the hits outgrow its first buffer (2 per query)."""
    mins, maxs = idx._prepare_v_arrays(mins, maxs)
    n, d = mins.shape
    d_i_stri = mins.strides[0] // mins.itemsize
    d_j_stri = mins.strides[1] // mins.itemsize
    ids = np.empty(2 * n, dtype=np.int64)
    counts = np.empty(n, dtype=np.uint64)
    nr = ctypes.c_int64(0)
    offn, offi = 0, 0
    while True:
        rtree.core.rt.Index_Intersects_id_v(
            idx.handle, n - offn, d, len(ids) - offi, d_i_stri, d_j_stri,
            mins[offn:].ctypes.data, maxs[offn:].ctypes.data, ids[offi:].ctypes.data,
            counts[offn:].ctypes.data, ctypes.byref(nr),
        )
        if nr.value == n - offn:
            return ids[: int(counts.sum())], counts
        offi += int(counts[offn : offn + nr.value].sum())
        offn += nr.value
        ids.resize(2 * len(ids) + int(counts[offn]), refcheck=False)


def rtree_query(b, q):
    dim = b.shape[1] // 2
    ids, counts = rtree_intersection_v(rtree_build(b), q[:, :dim], q[:, dim:])
    return np.repeat(np.arange(len(q)), counts.astype(np.int64)), ids


def rtree_pairs(b):
    qi, ti = rtree_query(b, b)
    keep = qi < ti
    return np.stack([qi[keep], ti[keep]], axis=1)


def rtree_nearest(b, p, k):
    ids, counts = rtree_build(b).nearest_v(p, p, num_results=k, strict=True)
    return ids.reshape(len(p), k)


def kd_nearest(p, q, k):
    return cKDTree(p).query(q, k=k)


def trick_query(b, q):
    """cKDTree of box centres, a Chebyshev radius from the largest boxes, then an exact filter."""
    dim = b.shape[1] // 2
    c = (b[:, :dim] + b[:, dim:]) * 0.5
    h = (b[:, dim:] - b[:, :dim]).max() * 0.5
    qc = (q[:, :dim] + q[:, dim:]) * 0.5
    qh = (q[:, dim:] - q[:, :dim]).max(axis=1) * 0.5
    cand = cKDTree(c).query_ball_point(qc, h + qh, p=np.inf)
    counts = np.fromiter((len(x) for x in cand), dtype=np.int64, count=len(q))
    qi = np.repeat(np.arange(len(q)), counts)
    ti = np.fromiter((j for x in cand for j in x), dtype=np.int64, count=counts.sum())
    ok = np.all((b[ti, :dim] <= q[qi, dim:]) & (q[qi, :dim] <= b[ti, dim:]), axis=1)
    return qi[ok], ti[ok]


def trick_pairs(b):
    dim = b.shape[1] // 2
    c = (b[:, :dim] + b[:, dim:]) * 0.5
    r = (b[:, dim:] - b[:, :dim]).max()
    p = cKDTree(c).query_pairs(r, p=np.inf, output_type="ndarray")
    i, j = np.minimum(p[:, 0], p[:, 1]), np.maximum(p[:, 0], p[:, 1])
    ok = np.all((b[i, :dim] <= b[j, dim:]) & (b[j, :dim] <= b[i, dim:]), axis=1)
    return np.stack([i[ok], j[ok]], axis=1)


# ---- checks ---------------------------------------------------------------------------------


def sorted_pairs(a, b):
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    o = np.lexsort((b, a))
    return a[o], b[o]


def same_query(got, want):
    g, w = sorted_pairs(*got), sorted_pairs(*want)
    return all(np.array_equal(x, y) for x, y in zip(g, w))


def same_pairs(got, want):
    return same_query((got[:, 0], got[:, 1]), (want[:, 0], want[:, 1]))


def box_distances(boxes, points, idx):
    """Distance from points[r] to boxes[idx[r, c]], exactly as orthant computes it."""
    d = boxes.shape[1] // 2
    b = boxes[idx]
    s = np.zeros(idx.shape)
    for ax in range(d):
        g = np.maximum(np.maximum(b[:, :, ax] - points[:, None, ax], points[:, None, ax] - b[:, :, d + ax]), 0.0)
        s = s + g * g
    return np.sqrt(s)


def same_knn(boxes, points, got_idx, mine):
    """The peer's neighbours are as near as orthant's, row by row. Rows are
    compared by distance, as a point inside several boxes has several nearest
    at distance 0 and each library picks among equals its own way."""
    got_idx = np.asarray(got_idx, np.int64).reshape(mine[1].shape)
    if (got_idx < 0).any() or (mine[1] < 0).any():
        return False
    mine_d = box_distances(boxes, points, mine[1])
    return np.array_equal(mine_d, mine[0]) and np.array_equal(np.sort(box_distances(boxes, points, got_idx), axis=1), mine[0])


# ---- the run --------------------------------------------------------------------------------


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def bytes_per_object(make, n):
    """Resident memory a structure of n boxes keeps, per box (RSS growth; the
    input array exists before and is not counted, temporaries freed are)."""
    before = rss_bytes()
    obj = make()  # noqa: F841 (kept alive while measured)
    return (rss_bytes() - before) / n


MEMORY = {
    "orthant, float64 input": lambda b: orthant.Index(b),
    "orthant, float32 input": lambda b: orthant.Index(b.astype(np.float32)),
    "shapely": lambda b: shapely_build(b),
    "rtree": lambda b: rtree_build(b),
    "cKDTree of centres": lambda b: cKDTree((b[:, :2] + b[:, 2:]) * 0.5),
}


def memory_mode(what, n):
    """Print the resident bytes per box a structure of n boxes adds (run in a fresh process)."""
    b = squares(np.random.default_rng(1), n, 2, WORLD2 * np.sqrt(n / N))
    print(f"{what}: {bytes_per_object(lambda: MEMORY[what](b), n):.1f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--memory", help=argparse.SUPPRESS)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", help="folder for results.json, results.md and results.svg")
    ap.add_argument("--big", type=int, default=1_000_000, help="boxes in the large build")
    ap.add_argument("--only", help="run only the workloads whose names contain this; with --out, "
                    "replace just their rows (and checks) in the results already there")
    args = ap.parse_args()
    if args.memory:
        return memory_mode(args.memory, args.big)

    rng = np.random.default_rng(2026)
    b2 = squares(rng, N, 2, WORLD2)
    big = squares(rng, args.big, 2, WORLD2 * np.sqrt(args.big / N))
    q2 = query_boxes(rng, N, 2, WORLD2, QSIDE2)
    p2 = rng.uniform(0, WORLD2, (N, 2))
    pts = rng.uniform(0, WORLD2, (N, 2))
    b3 = squares(rng, N, 3, WORLD3)
    q3 = query_boxes(rng, N, 3, WORLD3, QSIDE3)

    def o_pts_index():
        return orthant.Index(np.hstack([pts, pts]))

    # workload -> {library: callable}; orthant's is first.
    work = {
        "build 100k": {"orthant": lambda: orthant.Index(b2)},
        "build 1M": {"orthant": lambda: orthant.Index(big)},
        "query 100k boxes": {"orthant": lambda: orthant.Index(b2).query_boxes(q2)},
        "all pairs 100k": {"orthant": lambda: orthant.Index(b2).pairs()},
        "knn boxes k=1": {"orthant": lambda: orthant.Index(b2).nearest(p2, k=1)},
        "knn boxes k=8": {"orthant": lambda: orthant.Index(b2).nearest(p2, k=8)},
        "knn points k=1": {"orthant": lambda: o_pts_index().nearest(p2, k=1)},
        "knn points k=8": {"orthant": lambda: o_pts_index().nearest(p2, k=8)},
        "3D query 100k boxes": {"orthant": lambda: orthant.Index(b3).query_boxes(q3)},
        "3D all pairs 100k": {"orthant": lambda: orthant.Index(b3).pairs()},
    }
    w2 = {
        "query 100k boxes": lambda: orthant.Index(b2).query_boxes(q2, workers=2),
        "all pairs 100k": lambda: orthant.Index(b2).pairs(workers=2),
        "knn boxes k=1": lambda: orthant.Index(b2).nearest(p2, k=1, workers=2),
        "knn boxes k=8": lambda: orthant.Index(b2).nearest(p2, k=8, workers=2),
        "knn points k=1": lambda: o_pts_index().nearest(p2, k=1, workers=2),
        "knn points k=8": lambda: o_pts_index().nearest(p2, k=8, workers=2),
        "3D query 100k boxes": lambda: orthant.Index(b3).query_boxes(q3, workers=2),
        "3D all pairs 100k": lambda: orthant.Index(b3).pairs(workers=2),
    }
    if HAVE_SHAPELY2:
        work["build 100k"]["shapely"] = lambda: shapely_build(b2)
        work["build 1M"]["shapely"] = lambda: shapely_build(big)
        work["query 100k boxes"]["shapely"] = lambda: shapely_query(b2, q2)
        work["all pairs 100k"]["shapely"] = lambda: shapely_pairs(b2)
        work["knn boxes k=1"]["shapely"] = lambda: shapely_nearest1(b2, p2)
    if HAVE_RTREE_ARRAYS:
        for d, b, q in ((2, b2, q2), (3, b3, q3)):
            pre = "3D " if d == 3 else ""
            work[pre + "query 100k boxes"]["rtree"] = lambda b=b, q=q: rtree_query(b, q)
            work[pre + "all pairs 100k"]["rtree"] = lambda b=b: rtree_pairs(b)
        work["build 100k"]["rtree"] = lambda: rtree_build(b2)
        work["build 1M"]["rtree"] = lambda: rtree_build(big)
        work["knn boxes k=1"]["rtree"] = lambda: rtree_nearest(b2, p2, 1)
        work["knn boxes k=8"]["rtree"] = lambda: rtree_nearest(b2, p2, 8)
    for d, b, q in ((2, b2, q2), (3, b3, q3)):
        pre = "3D " if d == 3 else ""
        work[pre + "query 100k boxes"]["scipy trick"] = lambda b=b, q=q: trick_query(b, q)
        work[pre + "all pairs 100k"]["scipy trick"] = lambda b=b: trick_pairs(b)
    work["knn points k=1"]["scipy cKDTree"] = lambda: kd_nearest(pts, p2, 1)
    work["knn points k=8"]["scipy cKDTree"] = lambda: kd_nearest(pts, p2, 8)

    if args.only:
        work = {name: libs for name, libs in work.items() if args.only in name}
        w2 = {name: fn for name, fn in w2.items() if name in work}

    versions = {
        "orthant": orthant.__version__,
        "numpy": np.__version__,
        "scipy": scipy_version,
        "shapely": getattr(shapely, "__version__", None),
        "geos": ".".join(map(str, shapely.geos_version)) if HAVE_SHAPELY2 else None,
        "rtree": getattr(rtree, "__version__", None),
        "libspatialindex": rtree.core.rt.SIDX_Version().decode() if rtree else None,
        "python": platform.python_version(),
    }
    print("versions:", json.dumps(versions), flush=True)

    # Checks: every peer's answer equals orthant's (workers=1 and 2 alike).
    checks = {}
    for name, libs in work.items():
        if name.startswith("build"):
            continue
        mine = libs["orthant"]()
        if name in w2:
            other = w2[name]()
            same = all(np.array_equal(x, y) for x, y in zip(mine if isinstance(mine, tuple) else (mine,),
                                                             other if isinstance(other, tuple) else (other,)))
            assert same, f"{name}: workers=2 differs from workers=1"
        for lib, fn in libs.items():
            if lib == "orthant":
                continue
            got = fn()
            if "pairs" in name:
                ok = same_pairs(got, mine)
            elif "query" in name:
                ok = same_query(got, mine)
            else:
                boxes = np.hstack([pts, pts]) if "points" in name else b2
                got_idx = got if lib == "rtree" else got[1]  # shapely and scipy: (dist, idx)
                ok = same_knn(boxes, p2, got_idx, mine)
            checks[f"{name} / {lib}"] = bool(ok)
            print(f"check {name} / {lib}: {'equal' if ok else 'DIFFERENT'}", flush=True)

    load_before = os.getloadavg()
    uptime_before = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    times = {name: {lib: [] for lib in libs} for name, libs in work.items()}
    cpu = {name: {lib: [] for lib in libs} for name, libs in work.items()}
    times2 = {name: [] for name in w2}
    for r in range(args.rounds):
        for name, libs in work.items():
            for lib, fn in libs.items():
                c, t = time.process_time(), time.perf_counter()
                fn()
                times[name][lib].append(time.perf_counter() - t)
                cpu[name][lib].append(time.process_time() - c)
            if name in w2:
                t = time.perf_counter()
                w2[name]()
                times2[name].append(time.perf_counter() - t)
        print(f"round {r + 1}/{args.rounds} done", flush=True)
    uptime_after = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()

    med = {name: {lib: float(np.median(ts)) for lib, ts in libs.items()} for name, libs in times.items()}
    med2 = {name: float(np.median(ts)) for name, ts in times2.items()}
    medc = {name: {lib: float(np.median(ts)) for lib, ts in libs.items()} for name, libs in cpu.items()}

    mem = {}
    for what in MEMORY if not args.only else ():
        if (what == "shapely" and not HAVE_SHAPELY2) or (what == "rtree" and not HAVE_RTREE_ARRAYS):
            continue
        out = subprocess.run([sys.executable, __file__, "--memory", what, "--big", str(args.big)],
                             capture_output=True, text=True, check=True).stdout
        mem[what] = float(out.split()[-1])

    rows = []
    for name, libs in med.items():
        peers = {lib: t for lib, t in libs.items() if lib != "orthant"}
        best = min(peers, key=peers.get) if peers else None
        cpeers = {lib: t for lib, t in medc[name].items() if lib != "orthant"}
        cbest = min(cpeers, key=cpeers.get) if cpeers else None
        rows.append(
            {
                "workload": name,
                "orthant": libs["orthant"],
                "orthant_workers2": med2.get(name),
                "peers": peers,
                "best_peer": best,
                "ratio": peers[best] / libs["orthant"] if best else None,
                "orthant_cpu": medc[name]["orthant"],
                "peers_cpu": cpeers,
                "best_peer_cpu": cbest,
                "ratio_cpu": cpeers[cbest] / medc[name]["orthant"] if cbest else None,
            }
        )
    result = {
        "versions": versions,
        "rounds": args.rounds,
        "uptime_before": uptime_before,
        "uptime_after": uptime_after,
        "loadavg_before": load_before,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "checks": checks,
        "rows": rows,
        "bytes_per_box": mem,
    }
    old = os.path.join(args.out, "results.json") if args.out else None
    if args.only and old and os.path.exists(old):
        with open(old) as f:
            prev = json.load(f)
        mine = {r["workload"]: r for r in rows}
        prev["rows"] = [mine.pop(r["workload"], r) for r in prev["rows"]] + list(mine.values())
        prev["checks"].update(checks)
        prev.setdefault("partial_runs", []).append(
            {k: result[k] for k in ("rounds", "uptime_before", "uptime_after", "loadavg_before")} | {"only": args.only})
        result = prev
    md = to_markdown(result)
    print(md)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "results.json"), "w") as f:
            json.dump(result, f, indent=1)
        with open(os.path.join(args.out, "results.md"), "w") as f:
            f.write(md)
        plot(result, os.path.join(args.out, "results.svg"))


def to_markdown(res):
    v = res["versions"]
    out = [
        f"orthant {v['orthant']} against shapely {v['shapely']} (GEOS {v['geos']}), rtree {v['rtree']} "
        f"(libspatialindex {v['libspatialindex']}), scipy {v['scipy']}; numpy {v['numpy']}, Python {v['python']}, "
        f"{res['machine']}. Medians of {res['rounds']} rounds, single-threaded unless said.",
        f"Load: before `{res['uptime_before']}`; after `{res['uptime_after']}`.",
        *[f"Rows `{p['only']}` measured again later ({p['rounds']} rounds): load before `{p['uptime_before']}`; "
          f"after `{p['uptime_after']}`." for p in res.get("partial_runs", [])],
        "",
        "Two clocks: wall time (perf_counter) and CPU time of the process (process_time). On a shared, loaded",
        "machine wall time also counts waiting for a core, so the CPU-time ratio is the steadier one.",
        "",
        "| workload | orthant wall (s) | best peer, wall (s) | ratio wall | orthant CPU (s) | best peer, CPU (s) | ratio CPU | orthant workers=2, wall (s) | other peers, wall (s) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in res["rows"]:
        others = ", ".join(f"{k} {t:.4f}" for k, t in r["peers"].items() if k != r["best_peer"]) or "-"
        w2 = f"{r['orthant_workers2']:.4f}" if r["orthant_workers2"] else "-"
        peer = f"{r['best_peer']} {r['peers'][r['best_peer']]:.4f}" if r["best_peer"] else "-"
        cpeer = f"{r['best_peer_cpu']} {r['peers_cpu'][r['best_peer_cpu']]:.4f}" if r["best_peer_cpu"] else "-"
        ratio = f"{r['ratio']:.1f}x" if r["ratio"] else "-"
        cratio = f"{r['ratio_cpu']:.1f}x" if r["ratio_cpu"] else "-"
        out.append(
            f"| {r['workload']} | {r['orthant']:.4f} | {peer} | {ratio} | {r['orthant_cpu']:.4f} | {cpeer} | {cratio} | {w2} | {others} |"
        )
    out += ["", "Checked equal to orthant's answer: " + ", ".join(f"{k} {'yes' if ok else 'NO'}" for k, ok in res["checks"].items()), ""]
    out += ["Memory: resident bytes per box that a structure of the large build's boxes keeps (RSS growth, each in a fresh process):", ""]
    out += [f"- {k}: {b:.0f}" for k, b in res["bytes_per_box"].items()]
    return "\n".join(out) + "\n"


def plot(res, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = res["rows"]
    names = [r["workload"] for r in rows]
    libs = ["orthant", "shapely", "rtree", "scipy cKDTree", "scipy trick"]
    colours = {"orthant": "#1b7837", "shapely": "#2166ac", "rtree": "#b2182b", "scipy cKDTree": "#e08214", "scipy trick": "#8073ac"}
    fig, ax = plt.subplots(figsize=(11, 5))
    width = 0.16
    for k, lib in enumerate(libs):
        xs, ys = [], []
        for i, r in enumerate(rows):
            t = r["orthant_cpu"] if lib == "orthant" else r["peers_cpu"].get(lib)
            if t:
                xs.append(i + (k - 2) * width)
                ys.append(t)
        if xs:
            ax.bar(xs, ys, width, label=lib, color=colours[lib])
    ax.set_yscale("log")
    ax.set_ylabel("CPU seconds (median, numpy in to numpy out; log scale)")
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=30, ha="right")
    ax.legend()
    ax.set_title("orthant vs shapely 2 / rtree / scipy, single-threaded, 100k boxes (lower is better)")
    fig.tight_layout()
    fig.savefig(path)


if __name__ == "__main__":
    main()
