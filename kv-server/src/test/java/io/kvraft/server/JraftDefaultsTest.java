package io.kvraft.server;

import io.kvraft.server.launch.ServerMain;

import com.alipay.sofa.jraft.util.Utils;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

class JraftDefaultsTest {

    private String saved;

    @BeforeEach
    void save() {
        saved = System.getProperty(JraftDefaults.CLOSURE_POOL_MAX);
    }

    @AfterEach
    void restore() {
        if (saved == null) {
            System.clearProperty(JraftDefaults.CLOSURE_POOL_MAX);
        } else {
            System.setProperty(JraftDefaults.CLOSURE_POOL_MAX, saved);
        }
    }

    @Test
    void when_theClosurePoolCapIsUnset_then_itIsRaised() {
        System.clearProperty(JraftDefaults.CLOSURE_POOL_MAX);
        JraftDefaults.apply();
        assertThat(System.getProperty(JraftDefaults.CLOSURE_POOL_MAX)).isEqualTo("1024");
    }

    @Test
    void when_theUserSetTheClosurePoolCap_then_itIsKept() {
        System.setProperty(JraftDefaults.CLOSURE_POOL_MAX, "300");
        JraftDefaults.apply();
        assertThat(System.getProperty(JraftDefaults.CLOSURE_POOL_MAX)).isEqualTo("300");
    }

    /**
     * The real entry point in a JVM of its own, without the test JVM's {@code -Djraft.closure.threadpool.size.max}
     * (which the surefire argLine sets for the in-process clusters): the pool jraft builds takes the raised
     * cap, or the user's value when one is given.
     */
    @Test
    void when_theServerStarts_then_jraftsClosurePoolTakesTheRaisedCap_unlessTheUserSetOne() throws Exception {
        assertThat(poolSizeSeenByJraft(null)).isEqualTo(JraftDefaults.CLOSURE_POOL_MAX_VALUE);
        assertThat(poolSizeSeenByJraft("300")).isEqualTo(300);
    }

    private static int poolSizeSeenByJraft(String userValue) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx64m", "-cp", System.getProperty("java.class.path")));
        if (userValue != null) {
            cmd.add("-D" + JraftDefaults.CLOSURE_POOL_MAX + "=" + userValue);
        }
        cmd.add(ProbeMain.class.getName());
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        try {
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(p.waitFor(120, TimeUnit.SECONDS)).as(out).isTrue();
            String line = out.lines().filter(l -> l.startsWith("jraft closure pool max ")).findFirst()
                    .orElseThrow(() -> new AssertionError(out));
            return Integer.parseInt(line.substring("jraft closure pool max ".length()).trim());
        } finally {
            p.destroyForcibly();
        }
    }

    /** Runs in the child JVM: ServerMain with a config that does not exist (it exits 2); then asks jraft. */
    public static final class ProbeMain {
        public static void main(String[] args) {
            Runtime.getRuntime().addShutdownHook(new Thread(() ->
                    System.out.println("jraft closure pool max " + Utils.MAX_CLOSURE_EXECUTOR_POOL_SIZE)));
            ServerMain.main(new String[]{"--config", "no-such-config.yaml"});
        }
    }
}
