import io

from agentgym_bench.progress import LineProgress


def test_line_progress_prints_plain_lines_at_intervals():
    out = io.StringIO()
    bar = LineProgress(100, "rollout", "episode", interval=0.0, file=out)
    bar.update(1)
    bar.set_postfix_str("turn 2, 99 playing")
    bar.update(49)
    bar.close()
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("rollout: 1/100 episodes (1%)") and "left" not in lines[0]  # no estimate yet
    assert "turn 2, 99 playing" in lines[1]
    assert lines[-1].startswith("rollout: 50/100 episodes (50%)") and "left" in lines[-1]
    assert "\r" not in out.getvalue()
    quiet = io.StringIO()
    slow = LineProgress(10, "x", "it", interval=3600, file=quiet)
    for _ in range(10):
        slow.update()
    assert quiet.getvalue() == ""  # nothing between intervals; close() prints the last line
    slow.close()
    assert quiet.getvalue().startswith("x: 10/10")


def test_line_progress_last_line_of_finished_work_says_how_long_it_took():
    out = io.StringIO()
    bar = LineProgress(4, "rollout", "episode", interval=3600, file=out)
    bar.set_postfix_str("turn 5, 4 playing")
    bar.update(4)  # the last turn ends every episode; the postfix still describes the turn before
    bar.close()
    assert out.getvalue() == "rollout: 4/4 episodes (100%) in 0s\n"


def test_line_progress_estimates_resumed_work_from_this_runs_rate():
    out = io.StringIO()
    bar = LineProgress(100, "fine-tune", "step", interval=0.0, file=out, initial=90)
    bar.close()
    assert out.getvalue().startswith("fine-tune: 90/100 steps (90%)") and "left" not in out.getvalue()
    bar.start -= 10.0  # ten seconds for five steps of this run: ten seconds left for the other five
    bar.update(5)
    assert out.getvalue().splitlines()[-1].endswith(", ~10s left")
