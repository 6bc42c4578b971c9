/// Durations as the command lines take them (`--session-lifetime`, `--expires`).
public enum DurationText {
    /// `text` in seconds: `45s`, `30m`, `12h`, `7d` or plain seconds, not negative; `nil` for
    /// anything else, or a number too large to count.
    public static func seconds(_ text: String) -> Int64? {
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86400]
        var digits = Substring(text)
        var factor: Int64 = 1
        if let last = text.last, let unit = units[last] {
            (digits, factor) = (text.dropLast(), unit)
        }
        guard !digits.isEmpty, digits.utf8.allSatisfy({ (48...57).contains($0) }), let value = Int64(digits) else {
            return nil
        }
        let (seconds, overflow) = value.multipliedReportingOverflow(by: factor)
        return overflow ? nil : seconds
    }
}
