package io.kvraft.client.cli;

import io.kvraft.client.admin.KvAdmin;
import io.kvraft.client.admin.RegionInfo;
import io.kvraft.common.rpc.Transport;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.ParentCommand;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;

/**
 * {@code rebalance}: moves region leaders from the most to the least loaded nodes until no node
 * leads more than one region above another. Prints each move; the servers' own balancer does the
 * same in the background when enabled.
 */
@Command(name = "rebalance", description = "Spreads region leaders evenly over the nodes now; prints each move.")
final class RebalanceCommand implements Callable<Integer> {

    @ParentCommand
    KvCtl parent;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        try (KvAdmin c = parent.admin(); Transport t = new Transport(parent.clientConfig().tls())) {
            List<RegionInfo> regions = c.regions().join();
            List<Move> moves = plan(regions);
            for (Move m : moves) {
                TransferLeaderCommand.transfer(t, m.region(), m.to());
                out.println("region " + m.region().id() + ": " + m.region().leader() + " -> " + m.to());
            }
            out.println(moves.isEmpty() ? "balanced already" : moves.size() + " leadership transfers started");
            return 0;
        }
    }

    record Move(RegionInfo region, String to) {
    }

    /**
     * Greedy: repeatedly move one leader from a node to another that leads at least two fewer and holds a replica of
     * that region, the pair with the widest gap first. With a replica of every region on every node that is the most
     * loaded node to the least loaded; with fewer replicas, only to nodes the region is on, by way of a third node
     * when no region the first leads has a replica on the other ({@link #chain}). Each move or pair of moves narrows
     * a gap, so the plan ends.
     */
    static List<Move> plan(List<RegionInfo> regions) {
        Set<String> nodes = new LinkedHashSet<>();
        regions.forEach(r -> nodes.addAll(r.peers()));
        Map<String, List<RegionInfo>> led = new HashMap<>();
        nodes.forEach(n -> led.put(n, new ArrayList<>()));
        for (RegionInfo r : KvCtl.sorted(regions)) {
            if (!r.leader().isEmpty()) {
                led.computeIfAbsent(r.leader(), k -> new ArrayList<>()).add(r);
            }
        }
        List<Move> moves = new ArrayList<>();
        while (true) {
            Move best = null;
            int widest = 1;
            for (String from : led.keySet()) {
                for (String to : led.keySet()) {
                    int gap = led.get(from).size() - led.get(to).size();
                    if (gap <= widest) {
                        continue;
                    }
                    for (RegionInfo r : led.get(from)) {
                        if (r.peers().contains(to)) {
                            best = new Move(r, to);
                            widest = gap;
                            break;
                        }
                    }
                }
            }
            List<Move> step = best != null ? List.of(best) : chain(led);
            if (step.isEmpty()) {
                return moves;
            }
            for (Move m : step) {
                led.get(m.region().leader()).remove(m.region());
                led.get(m.to()).add(m.region().withLeader(m.to())); // as it is led after the move
                moves.add(m);
            }
        }
    }

    /**
     * When no node can hand a region straight to one leading two fewer (none of the regions it leads has a replica
     * there: 3, 2, 2, 2, 1 on five nodes), two moves that do it by way of a third node: a region from the first to
     * the third, and one the third leads to the last. The third's count stays; the gap narrows. Empty when there is
     * no such pair of moves.
     */
    private static List<Move> chain(Map<String, List<RegionInfo>> led) {
        List<String> byCount = new ArrayList<>(led.keySet());
        byCount.sort(java.util.Comparator.<String>comparingInt(n -> led.get(n).size()).reversed()
                .thenComparing(java.util.Comparator.naturalOrder()));
        for (String from : byCount) {
            for (int i = byCount.size() - 1; i >= 0; i--) {
                String to = byCount.get(i);
                if (led.get(from).size() - led.get(to).size() < 2) {
                    break;
                }
                for (RegionInfo first : led.get(from)) {
                    for (String via : first.peers()) {
                        if (via.equals(from) || via.equals(to) || !led.containsKey(via)) {
                            continue;
                        }
                        for (RegionInfo second : led.get(via)) {
                            if (second.peers().contains(to)) {
                                return List.of(new Move(first, via), new Move(second, to));
                            }
                        }
                    }
                }
            }
        }
        return List.of();
    }
}
