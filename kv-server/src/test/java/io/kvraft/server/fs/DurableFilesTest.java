package io.kvraft.server.fs;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** What a power cut does to these files is bench/power-loss-drill.sh's to prove; here, that the calls do their job. */
class DurableFilesTest {

    @TempDir
    Path dir;

    @Test
    void replaceWritesTheNewContentAndLeavesNoTemporaryFile() throws IOException {
        Path file = dir.resolve("STORE_ID");
        DurableFiles.replace(file, "old\n");
        DurableFiles.replace(file, "new\n");
        assertThat(file).hasContent("new");
        try (var names = Files.list(dir)) {
            assertThat(names).containsExactly(file);
        }
    }

    @Test
    void createDirectoriesMakesEveryMissingParentAndAcceptsOneThatExists() throws IOException {
        Path deep = dir.resolve("raft/region-7/snapshot");
        DurableFiles.createDirectories(deep);
        assertThat(deep).isDirectory();
        DurableFiles.createDirectories(deep);
        assertThat(deep).isDirectory();
    }

    @Test
    void aFileInTheWayIsAnError() throws IOException {
        Path file = Files.writeString(dir.resolve("raft"), "x");
        assertThatThrownBy(() -> DurableFiles.createDirectories(file.resolve("region-1")))
                .isInstanceOf(IOException.class);
        assertThatThrownBy(() -> DurableFiles.syncDirectory(dir.resolve("missing")))
                .isInstanceOf(IOException.class);
    }
}
