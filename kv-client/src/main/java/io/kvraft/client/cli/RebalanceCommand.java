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

    /** Greedy: repeatedly take a region from the node with most leaders and give it to the one with fewest. */
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
            String most = null;
            String least = null;
            for (String n : led.keySet()) {
                if (most == null || led.get(n).size() > led.get(most).size()) {
                    most = n;
                }
                if (least == null || led.get(n).size() < led.get(least).size()) {
                    least = n;
                }
            }
            if (most == null || led.get(most).size() <= led.get(least).size() + 1) {
                return moves;
            }
            RegionInfo r = led.get(most).remove(0);
            String target = least;
            if (!r.getPeersList().contains(target)) {
                return moves;
            }
            led.get(least).add(r);
            moves.add(new Move(r, target));
        }
    }
}
