package io.kvraft.benchmark;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** {@link CompilerActivity} over a directory laid out like Linux's /proc. */
class CompilerActivityTest {

    @TempDir
    Path proc;

    /** A stat line with utime and stime (fields 14, 15) after a name with spaces and parentheses. */
    private static String stat(long utime, long stime) {
        return "42 (C2 CompilerThre) (x) S 1 1 1 0 -1 4194368 0 0 0 0 " + utime + " " + stime + " 0 0 20 0 1 0 7 0 0\n";
    }

    private void process(long pid, long utime, long stime) throws IOException {
        Files.createDirectories(proc.resolve(pid + "/task"));
        Files.writeString(proc.resolve(pid + "/stat"), stat(utime, stime));
    }

    private void thread(long pid, int tid, String name, long utime, long stime) throws IOException {
        Path task = Files.createDirectories(proc.resolve(pid + "/task/" + tid));
        Files.writeString(task.resolve("comm"), name + "\n");
        Files.writeString(task.resolve("stat"), stat(utime, stime));
    }

    @Test
    void when_compilerThreadsRunAndEnd_then_theirTicksAreCountedOnce_andAllThreadsAreTheTotal() throws IOException {
        process(7, 300, 100);
        thread(7, 8, "C2 CompilerThre", 40, 10);
        thread(7, 9, "C1 CompilerThre", 5, 0);
        thread(7, 10, "JRaft-FSMCaller", 90, 10);
        process(11, 50, 50);
        thread(11, 12, "C2 CompilerThre", 20, 0);
        CompilerActivity a = new CompilerActivity(proc, List.of(7L, 11L, 99L)); // 99: no such process
        assertThat(a.sample()).isEqualTo(new CompilerActivity.Sample(75, 500));

        // thread 8 compiles on, thread 9 ends (HotSpot stops idle compiler threads), another starts
        thread(7, 8, "C2 CompilerThre", 60, 10);
        deleteTask(7, 9);
        thread(7, 13, "C1 CompilerThre", 3, 0);
        process(7, 330, 100);
        assertThat(a.sample()).isEqualTo(new CompilerActivity.Sample(75 + 20 + 3, 530));
    }

    private void deleteTask(long pid, int tid) throws IOException {
        Path task = proc.resolve(pid + "/task/" + tid);
        try (var files = Files.list(task)) {
            for (Path f : files.toList()) {
                Files.delete(f);
            }
        }
        Files.delete(task);
    }

    @Test
    void when_aStatLineIsRead_then_utimePlusStimeComeFromAfterTheName() throws IOException {
        Path f = Files.writeString(proc.resolve("stat"), stat(1234, 56));
        assertThat(CompilerActivity.ticks(f)).isEqualTo(1290);
        assertThat(CompilerActivity.ticks(proc.resolve("missing"))).isNull();
    }
}
