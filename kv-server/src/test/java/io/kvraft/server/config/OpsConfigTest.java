package io.kvraft.server.config;

import io.kvraft.common.config.ConfigException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/** The operators' sections of the server YAML: shutdown, logging, metrics, tls. */
class OpsConfigTest {

    private static final String BASE = """
            endpoint: 127.0.0.1:8182
            dataDir: data/node2
            cluster:
              peers: [127.0.0.1:8181, 127.0.0.1:8182, 127.0.0.1:8183]
            """;

    @TempDir
    Path dir;

    private ServerConfig load(String yaml) throws IOException {
        Path f = dir.resolve("server.yaml");
        Files.writeString(f, yaml);
        return ServerConfig.load(f);
    }

    @Test
    void when_sectionsAreAbsent_then_defaultsApply() throws IOException {
        ServerConfig c = load(BASE);

        assertThat(c.shutdown().timeoutMs()).isEqualTo(10_000);
        assertThat(c.logging().level()).isEqualTo("info");
        assertThat(c.metrics().port()).as("no HTTP endpoint unless asked").isZero();
        assertThat(c.metrics().host()).isNull();
        assertThat(c.metrics().jmx()).isTrue();
    }

    @Test
    void when_sectionsAreGiven_then_theyAreBound() throws IOException {
        ServerConfig c = load(BASE + """
                shutdown:
                  timeoutMs: 2500
                logging:
                  level: WARN
                metrics:
                  port: 9999
                  host: 0.0.0.0
                  jmx: false
                """);

        assertThat(c.shutdown().timeoutMs()).isEqualTo(2500);
        assertThat(c.logging().level()).isEqualTo("warn");
        assertThat(c.metrics()).isEqualTo(new ServerConfig.MetricsConfig(9999, "0.0.0.0", false));
        assertThat(c.withDataDir("x").shutdown().timeoutMs()).as("kept by withDataDir").isEqualTo(2500);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            shutdown: {timeoutMs: 10}        | shutdown.timeoutMs must be at least 100
            shutdown: {timeout: 1000}        | unknown key 'shutdown.timeout'
            logging: {level: loud}           | logging.level must be one of
            metrics: {port: 70000}           | metrics.port must be in 0..65535
            metrics: {port: -1}              | metrics.port must be in 0..65535
            metrics: {prometheusPort: 1}     | unknown key 'metrics.prometheusPort'
            """)
    void when_aValueIsInvalid_then_theErrorSaysWhich(String extra, String words) {
        Throwable t = catchThrowable(() -> load(BASE + extra + "\n"));

        assertThat(t).isInstanceOf(ConfigException.class).hasMessageContaining(words);
    }
}
