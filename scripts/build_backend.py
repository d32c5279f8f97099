"""setuptools' build backend, leaving the checkout as it found it. pip builds `pip install .` in place (since 21.3),
and setuptools writes build/ and trainsweep.egg-info/ there; a wheel or sdist build removes what it added.
Editable installs (`make setup`) keep setuptools' own behaviour: their metadata lives beside the code."""
import os
import shutil

from setuptools import build_meta
from setuptools.build_meta import *  # noqa: F401,F403  (every hook this module does not wrap is setuptools')

SCRATCH = ("build", "trainsweep.egg-info")


def _tidy(hook):
    def wrapped(*args, **kwargs):
        before = {name for name in SCRATCH if os.path.exists(name)}
        try:
            return hook(*args, **kwargs)
        finally:
            for name in set(SCRATCH) - before:
                shutil.rmtree(name, ignore_errors=True)
    return wrapped


build_wheel = _tidy(build_meta.build_wheel)
build_sdist = _tidy(build_meta.build_sdist)
prepare_metadata_for_build_wheel = _tidy(build_meta.prepare_metadata_for_build_wheel)
get_requires_for_build_wheel = _tidy(build_meta.get_requires_for_build_wheel)
get_requires_for_build_sdist = _tidy(build_meta.get_requires_for_build_sdist)
