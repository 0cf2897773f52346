package io.kvraft.benchmark;

import picocli.CommandLine;

import java.math.BigDecimal;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * picocli converter for every duration option of every command: a bare number is seconds ({@code 30},
 * {@code 0.5}), or numbers with units {@code ms}, {@code s}, {@code m}, {@code h}, largest first and
 * combinable ({@code 500ms}, {@code 30s}, {@code 10m}, {@code 1h}, {@code 2m30s}).
 *
 * <p>Hand-written: {@link Duration#parse} wants ISO-8601 ({@code PT30S}) and picocli has no duration
 * converter, while bare seconds must keep working for the scripts that pass {@code --duration 30}.
 */
public final class DurationConverter implements CommandLine.ITypeConverter<Duration> {

    /** The words every --help text uses for a duration option. */
    public static final String HELP = "seconds, or with a unit: 500ms, 30s, 10m, 1h";

    private static final Pattern BARE = Pattern.compile("\\d+(?:\\.\\d+)?");
    private static final Pattern PART = Pattern.compile("(\\d+(?:\\.\\d+)?)(ms|h|m|s)");
    private static final String[] ORDER = {"h", "m", "s", "ms"};

    @Override
    public Duration convert(String value) {
        return parse(value);
    }

    /** The duration {@code text} means; a {@link CommandLine.TypeConversionException} saying what is accepted otherwise. */
    public static Duration parse(String text) {
        try {
            return parseOrThrow(text);
        } catch (ArithmeticException e) { // beyond Duration's range
            throw bad(text);
        }
    }

    private static Duration parseOrThrow(String text) {
        String s = text == null ? "" : text.trim();
        if (BARE.matcher(s).matches()) {
            return ofSeconds(new BigDecimal(s));
        }
        Matcher m = PART.matcher(s);
        Duration total = Duration.ZERO;
        int pos = 0;
        int lastUnit = -1;
        while (pos < s.length() && m.find(pos) && m.start() == pos) {
            int unit = indexOf(m.group(2));
            if (unit <= lastUnit) {
                throw bad(text);
            }
            lastUnit = unit;
            BigDecimal n = new BigDecimal(m.group(1));
            total = total.plus(switch (m.group(2)) {
                case "h" -> ofSeconds(n.multiply(BigDecimal.valueOf(3600)));
                case "m" -> ofSeconds(n.multiply(BigDecimal.valueOf(60)));
                case "s" -> ofSeconds(n);
                default -> ofSeconds(n.movePointLeft(3));
            });
            pos = m.end();
        }
        if (s.isEmpty() || pos != s.length()) {
            throw bad(text);
        }
        return total;
    }

    /** Seconds as a double, the unit of {@link WorkloadOptions}. */
    public static double seconds(Duration d) {
        return d.toNanos() / 1e9;
    }

    /** Short text for reports: {@code 2m}, {@code 90s}, {@code 1h}, {@code 500ms}. */
    public static String text(Duration d) {
        long ms = d.toMillis();
        if (ms % 3_600_000 == 0 && ms > 0) {
            return ms / 3_600_000 + "h";
        }
        if (ms % 60_000 == 0 && ms > 0) {
            return ms / 60_000 + "m";
        }
        return ms % 1000 == 0 ? ms / 1000 + "s" : ms + "ms";
    }

    private static Duration ofSeconds(BigDecimal seconds) {
        return Duration.ofNanos(seconds.movePointRight(9).setScale(0, java.math.RoundingMode.HALF_UP).longValueExact());
    }

    private static int indexOf(String unit) {
        for (int i = 0; i < ORDER.length; i++) {
            if (ORDER[i].equals(unit)) {
                return i;
            }
        }
        return -1;
    }

    private static CommandLine.TypeConversionException bad(String text) {
        return new CommandLine.TypeConversionException("'" + text + "' is not a duration: give " + HELP);
    }
}
