package io.kvraft.client.cli;

import io.kvraft.client.KvClient;
import io.kvraft.client.proto.KvProto.RegionInfo;
import io.kvraft.client.rpc.Transport;
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
        try (KvClient c = parent.connect(); Transport t = new Transport(parent.clientConfig().tls())) {
            List<RegionInfo> regions = c.regions().join();
            List<Move> moves = plan(regions);
            for (Move m : moves) {
                TransferLeaderCommand.transfer(t, m.region(), m.to());
                out.println("region " + m.region().getId() + ": " + m.region().getLeader() + " -> " + m.to());
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
     * loaded node to the least loaded; with fewer replicas, only to nodes the region is on. Each move narrows a gap,
     * so the plan ends.
     */
    static List<Move> plan(List<RegionInfo> regions) {
        Set<String> nodes = new LinkedHashSet<>();
        regions.forEach(r -> nodes.addAll(r.getPeersList()));
        Map<String, List<RegionInfo>> led = new HashMap<>();
        nodes.forEach(n -> led.put(n, new ArrayList<>()));
        for (RegionInfo r : KvCtl.sorted(regions)) {
            if (!r.getLeader().isEmpty()) {
                led.computeIfAbsent(r.getLeader(), k -> new ArrayList<>()).add(r);
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
                        if (r.getPeersList().contains(to)) {
                            best = new Move(r, to);
                            widest = gap;
                            break;
                        }
                    }
                }
            }
            if (best == null) {
                return moves;
            }
            led.get(best.region().getLeader()).remove(best.region());
            led.get(best.to()).add(best.region());
            moves.add(best);
        }
    }
}
