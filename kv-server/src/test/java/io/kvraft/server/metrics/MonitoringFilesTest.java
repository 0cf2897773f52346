package io.kvraft.server.metrics;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.kvraft.server.config.ServerConfig;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The monitoring files of docker/ (no images can be pulled here, so they are checked as files): they
 * parse, the compose override mounts files that exist, Prometheus scrapes the port the servers serve
 * metrics on, and the dashboard's queries name only metrics the servers export.
 */
class MonitoringFilesTest {

    static final Path DOCKER = Path.of("..", "docker");
    private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void when_prometheusConfigIsRead_then_itScrapesEveryServersMetricsPort() throws IOException {
        JsonNode prom = YAML.readTree(DOCKER.resolve("monitoring/prometheus.yml").toFile());
        List<String> targets = new ArrayList<>();
        for (JsonNode job : prom.get("scrape_configs")) {
            assertThat(job.get("metrics_path").asText()).isEqualTo("/metrics");
            for (JsonNode sc : job.get("static_configs")) {
                sc.get("targets").forEach(t -> targets.add(t.asText()));
            }
        }
        List<String> expected = new ArrayList<>();
        for (int i = 1; i <= 3; i++) {
            ServerConfig c = ServerConfig.load(DOCKER.resolve("conf/server-" + i + ".yaml"));
            String host = c.endpoint().substring(0, c.endpoint().indexOf(':'));
            assertThat(c.metrics().port()).as("metrics.port of docker/conf/server-%d.yaml", i).isPositive();
            expected.add(host + ":" + c.metrics().port());
        }
        assertThat(targets).containsExactlyInAnyOrderElementsOf(expected);
    }

    @Test
    void when_composeOverrideIsRead_then_itAddsPrometheusAndGrafanaWithFilesThatExist() throws IOException {
        JsonNode compose = YAML.readTree(DOCKER.resolve("docker-compose.monitoring.yml").toFile());
        JsonNode services = compose.get("services");
        assertThat(services.has("prometheus")).isTrue();
        assertThat(services.has("grafana")).isTrue();
        JsonNode base = YAML.readTree(DOCKER.resolve("docker-compose.yml").toFile()).get("services");
        for (String s : List.of("prometheus", "grafana")) {
            assertThat(services.get(s).get("image").asText()).isNotBlank();
            for (JsonNode v : services.get(s).get("volumes")) {
                String source = v.asText().split(":")[0];
                assertThat(DOCKER.resolve(source)).as("volume source of %s", s).isRegularFile();
            }
            for (JsonNode d : services.get(s).withArray("depends_on")) {
                assertThat(base.has(d.asText()) || services.has(d.asText())).as("%s depends on %s", s, d).isTrue();
            }
        }
        for (String f : List.of("grafana-provisioning.yml", "grafana-datasource.yml")) {
            assertThat(YAML.readTree(DOCKER.resolve("monitoring").resolve(f).toFile()).get("apiVersion").asInt()).isEqualTo(1);
        }
    }

    @Test
    void when_dashboardIsRead_then_itIsValidJsonWithPanelsAndQueries() throws IOException {
        JsonNode dash = JSON.readTree(DOCKER.resolve("monitoring/grafana-dashboard.json").toFile());
        assertThat(dash.get("title").asText()).isEqualTo("kvraft");
        assertThat(dash.get("panels").size()).isGreaterThanOrEqualTo(8);
        Set<Integer> ids = new TreeSet<>();
        for (JsonNode p : dash.get("panels")) {
            assertThat(ids.add(p.get("id").asInt())).as("panel ids are unique").isTrue();
            assertThat(p.get("targets").size()).isPositive();
        }
        assertThat(metricNames()).contains("kv_ops_total", "kv_request_seconds_bucket", "kv_region_leader",
                "jvm_memory_bytes_used", "jvm_gc_collection_seconds_sum");
        // latencies are histograms: a p99 is computed from the buckets, summed before the quantile
        for (JsonNode panel : dash.get("panels")) {
            for (JsonNode t : panel.get("targets")) {
                String expr = t.get("expr").asText();
                if (expr.contains("_seconds_bucket")) {
                    assertThat(expr).as(panel.get("title").asText()).startsWith("histogram_quantile(0.99, sum by (")
                            .contains(" le) (rate(");
                }
                assertThat(expr).as(panel.get("title").asText()).doesNotContain("quantile=");
            }
        }
    }

    /** The metric names (kv_*, jvm_*, process_*) the dashboard's queries use. */
    static Set<String> metricNames() throws IOException {
        JsonNode dash = JSON.readTree(DOCKER.resolve("monitoring/grafana-dashboard.json").toFile());
        Set<String> names = new TreeSet<>();
        Pattern p = Pattern.compile("\\b((?:kv|jvm|process)_[a-z_]+)");
        for (JsonNode panel : dash.get("panels")) {
            for (JsonNode t : panel.get("targets")) {
                Matcher m = p.matcher(t.get("expr").asText());
                while (m.find()) {
                    names.add(m.group(1));
                }
            }
        }
        return names;
    }

    static String read(Path p) throws IOException {
        return Files.readString(p);
    }
}
