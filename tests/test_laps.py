"""The build's split (timing_s.build_parts) and the compile work of a run (compile.work), on a fake clock and
fake counters: the figures are the ones set here, whatever the machine's load."""
from src.base.laps import Laps
from src.measure import compiled


def test_laps_give_each_stage_the_time_since_the_previous_mark():
    now = iter([10.0, 12.5, 13.0, 20.0, 20.25]).__next__
    laps = Laps(start=9.0, clock=now)
    laps.lap("data")    # 9.0 -> 10.0
    laps.lap("model")   # -> 12.5
    laps.lap("data")    # -> 13.0: a recurring name adds up
    laps.lap("probe")   # -> 20.0
    assert laps.parts == {"data": 1.5, "model": 2.5, "probe": 7.0}


def test_compile_work_counts_only_what_this_run_compiled(monkeypatch):
    before = {"compile_s": 30.0, "fx_graph_cache_hits": 2, "fx_graph_cache_misses": 5}
    monkeypatch.setattr(compiled, "compile_work", lambda: {"compile_s": 34.5, "fx_graph_cache_hits": 6,
                                                         "fx_graph_cache_misses": 5})
    assert compiled.compile_work_since(before) == {"compile_s": 4.5, "fx_graph_cache_hits": 4, "fx_graph_cache_misses": 0}


def test_compile_work_reads_torchs_own_counters():
    import torch

    before = compiled.compile_work()
    torch.compile(lambda x: (x * 2).sin(), backend="eager")(torch.ones(3))
    after = compiled.compile_work_since(before)
    assert after["compile_s"] > 0 and set(after) >= {"fx_graph_cache_hits", "autograd_cache_misses"}
    # its parts are torch's own timers of the same compile, each inside it
    assert 0 < after["tracing_s"] <= after["compile_s"] and 0 <= after["backend_s"] <= after["compile_s"]
    assert 0 <= after["guards_s"] <= after["compile_s"]


def test_an_fp8_run_says_its_numerics_changed_in_the_summary():
    """precision=fp8 changes the loss, not only the speed: the summary has a `numerics` row; bf16 runs don't."""
    from omegaconf import OmegaConf

    from src.report.document import Report, summary_rows
    from tests.conftest import compose

    config = OmegaConf.to_container(compose("logger=none"), resolve=True)
    fp8 = Report(status="ok", config=config, timing_s={},
                 speed_paths={"fp8": {"scaling": "rowwise", "converted": 252, "skipped": {}}})
    bf16 = Report(status="ok", config=config, timing_s={}, speed_paths={})
    assert any(k == "numerics" and "not bf16's" in v for k, v in summary_rows(fp8))
    assert not any(k == "numerics" for k, _ in summary_rows(bf16))


def test_the_compile_line_names_graphs_the_autograd_cache_bypassed():
    """A bypassed graph is traced again by every job: the run's compile line says so, and is silent without one."""
    from src.report.sections import Compile

    work = {"compile_s": 4.3, "fx_graph_cache_hits": 2, "fx_graph_cache_misses": 0, "autograd_cache_bypasses": 1}
    assert "(graph cache 2 hits, 0 misses; 1 graphs bypassed the autograd cache" in Compile(work=work).line(None)
    assert "(graph cache 2 hits, 0 misses)" in Compile(work=work | {"autograd_cache_bypasses": 0}).line(None)


def test_a_command_line_process_reports_its_imports_once(monkeypatch):
    from src.base import laps

    monkeypatch.setattr(laps, "PROCESS_START", 10.0)
    assert laps.imports_before(18.5) == {"imports": 8.5}
    assert laps.imports_before(30.0) == {}  # a second run in the process imported nothing
