package io.kvraft.benchmark.nemesis;

import io.kvraft.server.launch.ProcessCluster;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * What the join and replace events do to the nodes' processes, by node index (0-based, the nemesis's order): a
 * {@link ProcessCluster}'s, or a test's record of what was asked.
 */
interface NodeProcesses {

    /** Starts node i on its data directory as it is (empty after {@link #wipe}). */
    void start(int i);

    /** kill -9 of node i (nothing when it is not running). */
    void kill(int i);

    /** SIGTERM to node i and a wait for its exit (kill -9 after 15 s); nothing when it is not running. */
    void stop(int i);

    /** Deletes node i's data directory, which must not be in use; throws when it cannot. */
    void wipe(int i);

    boolean running(int i);

    static NodeProcesses of(ProcessCluster cluster) {
        return new NodeProcesses() {
            @Override
            public void start(int i) {
                cluster.startNode(i);
            }

            @Override
            public void kill(int i) {
                cluster.kill(i);
            }

            @Override
            public void stop(int i) {
                if (cluster.isRunning(i)) {
                    cluster.terminate(i, Duration.ofSeconds(15));
                } else {
                    cluster.kill(i); // exited by itself (a removed node may): forget the process
                }
            }

            @Override
            public void wipe(int i) {
                deleteTree(cluster.dataDir(i));
            }

            @Override
            public boolean running(int i) {
                return cluster.isRunning(i);
            }
        };
    }

    /** Deletes a directory tree; nothing when it does not exist; an error when a file cannot be deleted. */
    static void deleteTree(Path root) {
        if (!Files.exists(root)) {
            return;
        }
        try (Stream<Path> s = Files.walk(root)) {
            List<Path> all = s.sorted(Comparator.reverseOrder()).toList();
            for (Path p : all) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot wipe " + root, e);
        }
    }
}
