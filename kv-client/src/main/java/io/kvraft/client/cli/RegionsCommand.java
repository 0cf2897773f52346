package io.kvraft.client.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.kvraft.client.admin.KvAdmin;
import io.kvraft.client.admin.MapRegions;
import io.kvraft.client.admin.RegionInfo;
import io.kvraft.common.KvException;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code regions}: one row per region: id, key range, epoch, conf version, leader, term, applied index, peers (and a
 * replica move's learners). By default from the nodes' own answers, asked node by node (live); {@code --from-map} from
 * the cluster map: its record of the regions with the nodes' last reports over it, from the map's leader or, when it
 * cannot answer, the node's copy.
 */
@Command(name = "regions", description = "Lists the regions: id, key range (hex), epoch, conf version, leader, term,"
        + " applied index, peers, and the learners of a replica move: by default as the nodes holding them answer now,"
        + " merged node by node.")
final class RegionsCommand implements Callable<Integer> {

    @ParentCommand
    KvCtl parent;

    @Option(names = "--json", description = "print JSON for machines")
    boolean json;

    @Option(names = "--from-map", description = "list the regions as the cluster map knows them: its record with the"
            + " nodes' reports (once per placement.intervalMs) over it from the map's leader, or the asked server's copy"
            + " when the leader does not answer; say which in a first line (on standard error with --json); exit 1 when"
            + " the map cannot answer for every region")
    boolean fromMap;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        try (KvAdmin c = parent.admin()) {
            PrintWriter out = spec.commandLine().getOut();
            List<RegionInfo> listed;
            if (fromMap) {
                MapRegions map;
                try {
                    map = c.mapRegions().join();
                } catch (java.util.concurrent.CompletionException e) {
                    spec.commandLine().getErr().println("error: the cluster map cannot list the regions: "
                            + KvException.unwrap(e).getMessage());
                    return 1;
                }
                listed = map.regions();
                if (map.fromCopy()) {
                    (json ? spec.commandLine().getErr() : out).printf("# %d regions from %s's copy of the cluster map"
                            + " (its leader did not answer; leaders only of the regions %s holds)%n", listed.size(),
                            map.node(), map.node());
                } else {
                    (json ? spec.commandLine().getErr() : out).printf("# %d regions as the cluster map's leader %s last"
                            + " heard of them from the nodes (asked %s)%n", listed.size(), map.mapLeader(), map.node());
                }
            } else {
                listed = c.regions().join();
            }
            List<RegionInfo> regions = KvCtl.sorted(listed);
            if (json) {
                List<Map<String, Object>> rows = new ArrayList<>();
                for (RegionInfo r : regions) {
                    Map<String, Object> row = new LinkedHashMap<>();
                    row.put("id", r.id());
                    row.put("startKey", KvCtl.hexKey(r.startKey()));
                    row.put("endKey", KvCtl.hexKey(r.endKey()));
                    row.put("epoch", r.epoch());
                    row.put("confVer", r.confVer());
                    row.put("leader", r.leader());
                    row.put("peers", r.peers());
                    row.put("term", r.term());
                    row.put("appliedIndex", r.appliedIndex());
                    if (r.mergingInto() != 0) {
                        row.put("mergingInto", r.mergingInto());
                    }
                    if (!r.learners().isEmpty()) {
                        row.put("learners", r.learners());
                    }
                    rows.add(row);
                }
                out.println(new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValueAsString(rows));
                return 0;
            }
            out.printf("%-6s %-10s %-10s %-6s %-5s %-21s %-6s %-10s %s%n", "ID", "START", "END", "EPOCH", "CONF",
                    "LEADER", "TERM", "APPLIED", "PEERS");
            for (RegionInfo r : regions) {
                out.printf("%-6d %-10s %-10s %-6d %-5d %-21s %-6d %-10d %s%s%s%n", r.id(),
                        KvCtl.bound(r.startKey(), "-inf"), KvCtl.bound(r.endKey(), "+inf"), r.epoch(), r.confVer(),
                        r.leader().isEmpty() ? "(none)" : r.leader(), r.term(), r.appliedIndex(),
                        String.join(",", r.peers()),
                        r.learners().isEmpty() ? "" : "  (learners " + String.join(",", r.learners()) + ")",
                        r.mergingInto() == 0 ? "" : "  (merging into " + r.mergingInto() + ")");
            }
            return 0;
        }
    }
}
