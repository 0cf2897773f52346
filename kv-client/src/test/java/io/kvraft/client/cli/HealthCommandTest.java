package io.kvraft.client.cli;

import io.kvraft.client.admin.RegionInfo;
import org.junit.jupiter.api.Test;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class HealthCommandTest {

    private static RegionInfo region(int id, String leader) {
        return new RegionInfo(id, new byte[0], new byte[0], 0, List.of(), leader, 0, 0, "", 0, false, 0, List.of());
    }

    @Test
    void when_everyRegionHasALeader_then_healthyWithLeaderCounts() {
        HealthCommand.Verdict v = HealthCommand.verdict(List.of(region(2, "kv2:8181"), region(1, "kv1:8181"),
                region(3, "kv1:8181")));
        assertThat(v.healthy()).isTrue();
        assertThat(v.line()).isEqualTo("healthy: 3 regions, all led (kv1:8181 2, kv2:8181 1)");
    }

    @Test
    void when_someRegionHasNoLeader_then_unhealthyNamingThem() {
        HealthCommand.Verdict v = HealthCommand.verdict(List.of(region(3, ""), region(1, "kv1:8181"), region(2, "")));
        assertThat(v.healthy()).isFalse();
        assertThat(v.line()).isEqualTo("unhealthy: 2 of 3 regions have no leader (2,3)");
    }

    @Test
    void when_noRegions_then_unhealthy() {
        assertThat(HealthCommand.verdict(List.of()).healthy()).isFalse();
    }

    @Test
    void when_timeoutIsNotPositive_then_usageError() {
        StringWriter err = new StringWriter();
        int code = KvCtl.run(new String[]{"--servers", "127.0.0.1:1", "health", "--timeout-ms", "0"},
                new PrintWriter(new StringWriter(), true), new PrintWriter(err, true));
        assertThat(code).isEqualTo(2);
        assertThat(err.toString()).contains("--timeout-ms must be positive");
    }
}
