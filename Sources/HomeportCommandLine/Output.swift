import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Writing to the terminal without the (non-`Sendable`) C `stdout` globals.
public enum Output {
    /// Writes `text` and a newline to standard output.
    public static func line(_ text: String) {
        write(text + "\n", to: 1)
    }

    /// Writes `text` and a newline to standard error.
    public static func error(_ text: String) {
        write(text + "\n", to: 2)
    }

    /// `object` (what `JSONSerialization` takes) as JSON with its keys sorted, the way every
    /// command's `--json` prints it: indented over lines for a person, or `compact`, one line a
    /// record, for a program that reads line by line.
    public static func json(_ object: Any, compact: Bool = false) throws -> String {
        let data = try JSONSerialization.data(
            withJSONObject: object, options: compact ? [.sortedKeys] : [.sortedKeys, .prettyPrinted])
        return String(decoding: data, as: UTF8.self)
    }

    /// `text` with every C0 and C1 control character (ESC, CR, BEL, …) but the newline shown as `?`,
    /// so that text from elsewhere (a database row, a server's answer) cannot drive the terminal.
    public static func printable(_ text: String) -> String {
        String(
            String.UnicodeScalarView(
                text.unicodeScalars.map { scalar in
                    scalar != "\n" && (scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)) ? "?" : scalar
                }))
    }

    private static func write(_ text: String, to descriptor: Int32) {
        var text = text
        text.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                #if canImport(Glibc)
                    let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                #else
                    let written = Darwin.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                #endif
                if written <= 0 { return }
                offset += written
            }
        }
    }
}

/// Exit codes shared by Homeport's command-line tools.
public enum ExitCode: Int32, Sendable {
    /// Success.
    case success = 0
    /// The command ran and failed (database unreachable, port in use, …).
    case failure = 1
    /// The command line was wrong.
    case usage = 2
    /// The command refused to act without a confirmation.
    case refused = 3
}
