"""test_check.py — the checker's rules on made-up observations, each case a
run that must fail (or pass) for one reason: python3 -m unittest test_check
(t5020 runs it)."""
import datetime
import os
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check  # noqa: E402
from traffic import Consumer  # noqa: E402


class P:
    """A producer's log: (t_sent, t_done, outcome, first, records, leader)."""

    def __init__(self, stream, shard, log):
        self.stream, self.shard, self.log = stream, shard, log


def figures():
    return {"acked_quorum": 0, "acked_leader": 0, "lost_quorum": 0, "lost_leader": 0, "false_failovers": 0}


FAULT = [{"start": 10.0, "end": 14.0, "kind": "kill"}]
WINDOWS = check.fault_windows(FAULT, 2.0)  # [10, 14 + 2*2 + 1 = 19]


class Acked(unittest.TestCase):
    def run_check(self, policy, t_done, final):
        p = P("s", 0, [(t_done, t_done, "ok", 5, ["a", "b"], "x"), (1, 1, "unknown:EOFError", None, ["c"], "x")])
        v, fig = [], figures()
        check.check_acked(check.acked_records([p]), {("s", 0): final}, {"s": policy}, WINDOWS, v, fig)
        return v, fig

    def test_quorum_all_there(self):
        v, fig = self.run_check("quorum", 3.0, {5: "a", 6: "b", 7: "c"})
        self.assertEqual(v, [])
        self.assertEqual(fig["acked_quorum"], 2)

    def test_quorum_lost_is_a_violation_naming_the_offset(self):
        v, fig = self.run_check("quorum", 3.0, {5: "a", 6: "z"})
        self.assertEqual(v[0][0], "acked_lost")
        self.assertIn("first at offset 6", v[0][1])
        self.assertEqual(fig["lost_quorum"], 1)

    def test_quorum_moved_is_lost(self):
        v, _ = self.run_check("quorum", 3.0, {6: "a", 7: "b"})
        self.assertEqual(v[0][0], "acked_lost")

    def test_leader_lost_in_a_fault_is_counted_not_a_violation(self):
        v, fig = self.run_check("leader", 12.0, {5: "a"})
        self.assertEqual(v, [])
        self.assertEqual(fig["lost_leader"], 1)

    def test_leader_lost_outside_faults_is_a_violation(self):
        v, _ = self.run_check("leader", 30.0, {5: "a"})
        self.assertEqual(v[0][0], "leader_ack_lost_outside_faults")

    def test_abandoned_loss_within_the_stated_risk(self):
        p = P("s", 0, [(3.0, 3.0, "ok", 5, ["a", "b"], "x")])
        v, fig = [], figures()
        ab = {"s/0": {"stated_risk": 2}}
        check.check_acked(check.acked_records([p]), {("s", 0): {}}, {"s": "quorum"}, WINDOWS, v, fig, ab)
        self.assertEqual(v, [])
        self.assertEqual((fig["lost_quorum"], fig["abandoned_lost"], ab["s/0"]["lost_acked"]), (0, 2, 2))

    def test_abandoned_loss_above_the_stated_risk(self):
        p = P("s", 0, [(3.0, 3.0, "ok", 5, ["a", "b"], "x")])
        v, fig = [], figures()
        check.check_acked(check.acked_records([p]), {("s", 0): {5: "a"}}, {"s": "quorum"}, WINDOWS, v, fig,
                          {"s/0": {"stated_risk": 0}})
        self.assertEqual(v[0][0], "abandon_risk_understated")

    def test_abandoned_leader_shard_loss_in_a_fault_is_not_the_abandons(self):
        p = P("s", 0, [(12.0, 12.0, "ok", 5, ["a"], "x"), (30.0, 30.0, "ok", 6, ["b"], "x")])
        v, fig = [], figures()
        ab = {"s/0": {"stated_risk": 0}}
        check.check_acked(check.acked_records([p]), {("s", 0): {6: "b"}}, {"s": "leader"}, WINDOWS, v, fig, ab)
        self.assertEqual(v, [])
        self.assertEqual((fig["lost_leader"], ab["s/0"]["lost_acked"]), (1, 0))

    def test_unreadable_shard(self):
        v, _ = self.run_check("quorum", 3.0, None)
        self.assertEqual(v[0][0], "unreadable")


class Unique(unittest.TestCase):
    def test_duplicate_content(self):
        v = []
        check.check_unique({("s", 0): {1: "a", 2: "b", 3: "a"}}, v)
        self.assertEqual(v[0][0], "duplicate")
        self.assertIn("offsets 1 and 3", v[0][1])

    def test_no_duplicate(self):
        v = []
        check.check_unique({("s", 0): {1: "a", 2: "b"}}, v)
        self.assertEqual(v, [])


class Consumers(unittest.TestCase):
    def consumer(self):
        return Consumer(None, "s", 0, 0, threading.Event())

    def test_hwm_back_and_two_contents(self):
        c = self.consumer()
        c.note(1.0, "b1", 10, 3, [(1, 0, "a"), (2, 0, "b")])
        c.note(2.0, "b2", 8, 3, [(2, 0, "x")])
        kinds = sorted(e[1] for e in c.events)
        self.assertEqual(kinds, ["hwm_back", "two_contents"])
        v = []
        check.check_consumers([c], {("s", 0): {1: "a", 2: "x"}}, v)
        self.assertIn("hwm_back", [x[0] for x in v])

    def test_served_then_lost(self):
        c = self.consumer()
        c.note(1.0, "b1", 3, 3, [(1, 0, "a"), (2, 0, "b")])
        v = []
        check.check_consumers([c], {("s", 0): {1: "a"}}, v)
        self.assertEqual(v[0][0], "served_then_lost")

    def test_all_still_there(self):
        c = self.consumer()
        c.note(1.0, "b1", 3, 3, [(1, 0, "a"), (2, 0, "b")])
        v = []
        check.check_consumers([c], {("s", 0): {1: "a", 2: "b", 3: "c"}}, v)
        self.assertEqual(v, [])


class FalseFailovers(unittest.TestCase):
    TL = [(0.0, "q/0", "Active", 1, "b1")]

    def run_check(self, timeline, events=()):
        v, fig = [], figures()
        check.check_false_failovers(timeline, list(events), FAULT, 2.0, 60.0, v, fig)
        return v, fig

    def test_failover_inside_a_fault_window(self):
        v, _ = self.run_check(self.TL + [(16.0, "q/0", "Active", 2, "b2")])
        self.assertEqual(v, [])

    def test_failover_in_a_quiet_stretch(self):
        v, fig = self.run_check(self.TL + [(25.0, "q/0", "Active", 2, "b2")])
        self.assertEqual(v[0][0], "false_failover")
        self.assertEqual(fig["false_failovers"], 1)

    def test_failover_before_the_first_fault(self):
        v, _ = self.run_check(self.TL + [(5.0, "q/0", "Fencing", 2, "b2")])
        self.assertEqual(v[0][0], "false_failover")

    def test_lease_lapse_in_a_quiet_stretch(self):
        v, _ = self.run_check(self.TL, [(30.0, "lease_lapsed", "lease of b2 lapsed")])
        self.assertEqual(v[0][0], "false_lease_lapse")

    def test_lease_lapse_in_a_fault(self):
        v, _ = self.run_check(self.TL, [(13.0, "lease_lapsed", "lease of b2 lapsed")])
        self.assertEqual(v, [])


class QuietStalls(unittest.TestCase):
    T0 = 1796637600.0  # 2026-12-07T10:00:00Z, the run's clock 0

    def line(self, logged_s, for_ms):
        at = datetime.datetime.fromtimestamp(self.T0 + logged_s, datetime.timezone.utc)
        ts = at.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (at.microsecond // 1000)
        return ('b1.log: ts=%s level=warn msg="no quorum: written records wait for a majority" shard=q_0-ab for_ms=%d hwm=1 end=2'
                % (ts, for_ms))

    def quiet(self, *lines):
        return check.quiet_stalls(list(lines), self.T0, FAULT, 2.0, 60.0)

    def test_a_stall_that_began_in_a_fault_window(self):
        self.assertEqual(self.quiet(self.line(12.0, 1500)), [])

    def test_a_stall_that_began_in_a_quiet_stretch(self):
        q = self.quiet(self.line(27.3, 1300))
        self.assertEqual([t for t, _ in q], [26.0])

    def test_logged_after_the_window_but_began_inside_it(self):
        self.assertEqual(self.quiet(self.line(20.5, 2000)), [])  # began at 18.5, window ends at 19

    def test_after_the_traffic_stopped(self):
        self.assertEqual(self.quiet(self.line(62.0, 1000)), [])  # began at 61, after the run's faults ended (60)

    def test_a_line_without_a_time_is_not_counted(self):
        self.assertEqual(self.quiet("b1.log: level=warn for_ms=1000"), [])


class Availability(unittest.TestCase):
    def test_seconds_from_the_end_to_all_active(self):
        tl = [(0.0, "a", "Active", 1, "b1"), (0.0, "b", "Active", 1, "b1"), (12.0, "a", "Fencing", 2, "b2"),
              (15.5, "a", "Active", 2, "b2")]
        self.assertEqual(check.availability(tl, FAULT, ["a", "b"]), [("kill", 1.5)])

    def test_already_active_at_the_end(self):
        tl = [(0.0, "a", "Active", 1, "b1"), (20.0, "a", "Fencing", 2, "b2")]
        self.assertEqual(check.availability(tl, FAULT, ["a"]), [("kill", 0.0)])

    def test_never_active(self):
        tl = [(0.0, "a", "Active", 1, "b1"), (12.0, "a", "NoCaughtUpReplica", 2, None)]
        self.assertEqual(check.availability(tl, FAULT, ["a"]), [("kill", None)])



class ReusedOffset(unittest.TestCase):
    """A lost record whose offset was acknowledged again to another one."""

    def test_first_acknowledgement_is_counted_lost(self):
        p = P("s", 0, [(1.0, 1.0, "ok", 10, ["a"], "x"), (30.0, 30.0, "ok", 10, ["b"], "y")])
        v, fig = [], figures()
        check.check_acked(check.acked_records([p]), {("s", 0): {10: "b"}}, {"s": "quorum"}, WINDOWS, v, fig)
        self.assertEqual(fig["acked_quorum"], 2)
        self.assertEqual(fig["lost_quorum"], 1)
        self.assertEqual([x[0] for x in v], ["acked_lost"])
        self.assertIn("acknowledged 'a', now 'b'", v[0][1])

    def test_unreadable_is_counted_apart(self):
        p = P("s", 0, [(1.0, 1.0, "ok", 10, ["a", "b"], "x")])
        v, fig = [], figures()
        check.check_acked(check.acked_records([p]), {("s", 0): None}, {"s": "quorum"}, WINDOWS, v, fig)
        self.assertEqual(fig["unreadable"], 2)
        self.assertEqual([x[0] for x in v], ["unreadable"])


class Outages(unittest.TestCase):
    """The longest stretch with a shard not Active, inside a fault's window
    [10, 19]."""

    def test_an_outage_after_the_end_counts(self):
        tl = [(0.0, "a", "Active", 1, "x"), (15.0, "a", "Fencing", 1, None), (17.5, "a", "Active", 2, "y")]
        self.assertEqual(check.outages(tl, FAULT, ["a"], 2.0), [("kill", 2.5)])
        # the view of availability: Active at the end, so 0 s
        self.assertEqual(check.availability(tl, FAULT, ["a"]), [("kill", 0.0)])

    def test_clipped_to_the_window(self):
        tl = [(0.0, "a", "Active", 1, "x"), (8.0, "a", "Fencing", 1, None), (12.0, "a", "Active", 2, "y"),
              (18.0, "a", "Fencing", 2, None)]
        self.assertEqual(check.outages(tl, FAULT, ["a"], 2.0), [("kill", 2.0)])

    def test_fault_free_seconds(self):
        self.assertEqual(check.uncovered(0.0, 30.0, [(10.0, 19.0), (15.0, 22.0)]), 18.0)
        self.assertEqual(check.uncovered(0.0, 20.0, [(0.0, 25.0)]), 0.0)
        fig = figures()
        check.check_false_failovers([], [], FAULT, 2.0, 30.0, [], fig)
        self.assertEqual(fig["fault_free_s"], 21.0)


class ProducerAvailability(unittest.TestCase):
    """From the first publish after a fault's end to the first acknowledged one."""

    def test_slowest_shard_counts(self):
        a = P("s", 0, [(12.0, 12.5, "unknown:EOFError", None, ["x"], "l"), (14.2, 14.3, "status:1", None, ["y"], "l"),
                       (15.0, 15.4, "ok", 1, ["z"], "l")])
        b = P("s", 1, [(14.5, 14.6, "ok", 1, ["w"], "l")])
        self.assertEqual(check.producer_availability([a, b], FAULT), [("kill", 1.2)])

    def test_idle_producer_does_not_count(self):
        a = P("s", 0, [(3.0, 3.1, "ok", 1, ["x"], "l")])
        self.assertEqual(check.producer_availability([a], FAULT), [("kill", 0.0)])

    def test_never_acknowledged_again(self):
        a = P("s", 0, [(15.0, 25.0, "unknown:timeout", None, ["x"], "l")])
        self.assertEqual(check.producer_availability([a], FAULT), [("kill", None)])


if __name__ == "__main__":
    unittest.main()
