package io.kvraft.benchmark;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class DurationConverterTest {

    @ParameterizedTest
    @CsvSource({"30,30000", "0.6,600", "30s,30000", "10m,600000", "1h,3600000", "500ms,500", "2m30s,150000",
            "1h1m1s,3661000", "1.5s,1500", " 45 ,45000", "0,0"})
    void when_aDurationIsGiven_then_bareNumbersAreSecondsAndUnitsAreHonoured(String text, long millis) {
        assertThat(DurationConverter.parse(text)).isEqualTo(Duration.ofMillis(millis));
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "ten", "30x", "-5", "5 s", "PT30S", "1s2m", "30s30s", "s", "1e3",
            "99999999999999999999h"})
    void when_theTextIsNotADuration_then_conversionFailsSayingWhatIsAccepted(String text) {
        assertThatThrownBy(() -> DurationConverter.parse(text))
                .isInstanceOf(CommandLine.TypeConversionException.class)
                .hasMessageContaining("is not a duration: give seconds, or with a unit: 500ms, 30s, 10m, 1h");
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "--duration ten                              | --duration",
            "--warmup 3x                                 | --warmup",
            "--drain-timeout soon                        | --drain-timeout",
            "sweep --threads-ladder 1 --step-duration 1d | --step-duration",
            "sweep --threads-ladder 1 --step-warmup -1   | --step-warmup",
            "nemesis --interval 10q                      | --interval",
            "nemesis --hold 4sec                         | --hold",
            "nemesis --check-budget x                    | --check-budget"})
    void when_aDurationOptionIsBad_then_oneLineNamesTheOptionAndTheExitCodeIs2(String args, String option) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = BenchmarkMain.execute(args.trim().split(" +"), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8), c -> {
                    throw new AssertionError("must not connect");
                });
        String e = err.toString(StandardCharsets.UTF_8).strip();
        assertThat(code).isEqualTo(BenchmarkMain.EXIT_USAGE);
        assertThat(e).doesNotContain("\n").startsWith("Invalid value for option '" + option + "'")
                .contains("is not a duration");
    }

    @ParameterizedTest
    @CsvSource({"--help,--duration=TIME", "sweep --help,--step-duration=TIME", "nemesis --help,--hold=TIME"})
    void when_helpIsShown_then_durationOptionsSayWhichUnitsTheyTake(String args, String option) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int code = BenchmarkMain.execute(args.split(" "), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8), c -> null);
        String help = out.toString(StandardCharsets.UTF_8).replaceAll("\\s+", " ");
        assertThat(code).isZero();
        assertThat(help).contains(option).contains("seconds, or with a unit: 500ms, 30s, 10m, 1h");
    }
}
