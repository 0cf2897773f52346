package io.kvraft.server;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * docs/client-api.md's example program, compiled and run on the classpath a project that depends on kv-client gets
 * (kv-client's classes and {@code target/dependents.classpath}, which its build writes): it needs nothing of the
 * server's (jraft, RocksDB) or the CLI's (picocli, logback).
 */
class ClientExampleTest {

    private static final Path REPO = Path.of(System.getProperty("user.dir")).getParent();
    private static final Pattern EXAMPLE = Pattern.compile("<!-- example: (\\w+)\\.java -->\\s*```java\\n(.*?)```",
            Pattern.DOTALL);

    @TempDir
    Path dir;

    @Test
    void when_theDocsExampleRunsOnTheClientsOwnDependencies_then_itTalksToTheCluster() throws Exception {
        Matcher m = EXAMPLE.matcher(Files.readString(REPO.resolve("docs/client-api.md")));
        assertThat(m.find()).as("an example in docs/client-api.md").isTrue();
        String name = m.group(1);
        Path source = dir.resolve(name + ".java");
        Files.writeString(source, m.group(2));

        List<String> classpath = new ArrayList<>();
        classpath.add(REPO.resolve("kv-client/target/classes").toString());
        classpath.addAll(List.of(Files.readString(REPO.resolve("kv-client/target/dependents.classpath")).trim()
                .split(File.pathSeparator)));
        assertThat(classpath).as("a client's dependencies").noneMatch(p -> p.contains("jraft") || p.contains("rocksdb")
                || p.contains("logback") || p.contains("picocli"));
        String cp = String.join(File.pathSeparator, classpath) + File.pathSeparator + dir;

        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        ByteArrayOutputStream errors = new ByteArrayOutputStream();
        int compiled = javac.run(null, null, errors, "-cp", cp, "-d", dir.toString(), source.toString());
        assertThat(compiled).as("javac: %s", errors.toString(StandardCharsets.UTF_8)).isZero();

        try (InProcessCluster cluster = InProcessCluster.start(3, 2, dir.resolve("cluster"), "memory")) {
            List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-cp", cp, name));
            cmd.addAll(cluster.endpoints());
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            try {
                assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("the example ended in time").isTrue();
                String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                assertThat(p.exitValue()).as("exit code; output:%n%s", out).isZero();
                assertThat(out).contains("hello, world").contains("2 regions");
            } finally {
                p.destroyForcibly();
            }
        }
    }
}
