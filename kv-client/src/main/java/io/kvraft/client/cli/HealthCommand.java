package io.kvraft.client.cli;

import io.kvraft.client.admin.KvAdmin;
import io.kvraft.client.admin.RegionInfo;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;

/**
 * {@code health}: exit 0 only when the servers asked see a leader for every region (a container
 * healthcheck: {@code kv-client --servers kv1:8181 health}); 1 when some region has none; 3 when no
 * server answers.
 */
@Command(name = "health", description = "Exit code 0 when every region has a leader (as the servers asked see it: the"
        + " first, and more while some region is on none of those asked), 1 when some region has none, 3 when no server"
        + " answers. Prints one line.")
final class HealthCommand implements Callable<Integer> {

    @ParentCommand
    KvCtl parent;

    @Option(names = "--timeout-ms", defaultValue = "10000", paramLabel = "MS",
            description = "Give up reaching a server after this long (default: ${DEFAULT-VALUE}).")
    long timeoutMs;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
        if (timeoutMs <= 0) {
            throw new IllegalArgumentException("--timeout-ms must be positive, got " + timeoutMs);
        }
        try (KvAdmin c = parent.admin(timeoutMs)) {
            Verdict v = verdict(c.regions().join());
            (v.healthy() ? spec.commandLine().getOut() : spec.commandLine().getErr()).println(v.line());
            return v.healthy() ? 0 : 1;
        }
    }

    /** Whether every region is led, and the line saying so. */
    record Verdict(boolean healthy, String line) {
    }

    static Verdict verdict(List<RegionInfo> regions) {
        if (regions.isEmpty()) {
            return new Verdict(false, "unhealthy: the server reports no regions");
        }
        Map<String, Integer> byLeader = new TreeMap<>();
        StringBuilder leaderless = new StringBuilder();
        int missing = 0;
        for (RegionInfo r : KvCtl.sorted(regions)) {
            if (r.leader().isEmpty()) {
                missing++;
                leaderless.append(leaderless.length() == 0 ? "" : ",").append(r.id());
            } else {
                byLeader.merge(r.leader(), 1, Integer::sum);
            }
        }
        if (missing > 0) {
            return new Verdict(false, "unhealthy: " + missing + " of " + regions.size() + " regions have no leader ("
                    + leaderless + ")");
        }
        StringBuilder counts = new StringBuilder();
        byLeader.forEach((leader, n) -> counts.append(counts.length() == 0 ? "" : ", ").append(leader).append(' ').append(n));
        return new Verdict(true, "healthy: " + regions.size() + " regions, all led (" + counts + ")");
    }
}
