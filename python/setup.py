"""Build orthant's Python package: one extension, orthant._ext, that compiles
the C library's own sources (../src, ../include of this repository) into it.

pip builds in place (python/ itself), so the library is found beside this file.
A copy of python/ made elsewhere can name the repository with ORTHANT_ROOT.
"""
import os
import sys

import numpy
from setuptools import Extension, setup

here = os.path.dirname(os.path.abspath(__file__))


def library_root():
    candidates = [os.environ.get("ORTHANT_ROOT"), os.path.join(here, "..")]
    for root in candidates:
        if root and os.path.isfile(os.path.join(root, "include", "orthant", "orthant.h")) and os.path.isfile(
            os.path.join(root, "src", "dim2.c")
        ):
            return os.path.abspath(root)
    sys.exit(
        "orthant: the C library's src/ and include/ were not found beside python/; "
        "set ORTHANT_ROOT to the repository's top folder"
    )


root = library_root()
ext = Extension(
    "orthant._ext",
    sources=["csrc/ext.c", "csrc/lib_base.c", "csrc/lib_mem_os.c", "csrc/lib_task.c", "csrc/lib_dim2.c", "csrc/lib_dim3.c"],
    include_dirs=[os.path.join(root, "include"), os.path.join(root, "src"), "csrc", numpy.get_include()],
    depends=["csrc/index_dim.h", "csrc/ext_packed.inc", "csrc/ext_dynamic.inc", os.path.join(root, "src", "morton.h")],
    # -ffp-contract=off: distances are computed with exactly the operations the
    # documentation (and the tests' numpy brute force) give, no fused multiply-adds.
    extra_compile_args=["-std=c11", "-O2", "-ffp-contract=off", "-fvisibility=hidden", "-pthread"],
    extra_link_args=["-pthread"],
)

setup(
    name="orthant",
    version="0.1.0",
    description="Quadtree/octree spatial index with a numpy batch API",
    license="MIT",
    packages=["orthant"],
    package_data={"orthant": ["py.typed", "*.pyi"]},
    ext_modules=[ext],
    python_requires=">=3.9",
    install_requires=["numpy"],
)
