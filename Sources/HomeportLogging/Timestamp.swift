import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// UTC timestamps for log lines (`2026-11-29T19:50:00.123Z`), formatted without Foundation.
///
/// The date-and-second part is computed once per second and shared, so a busy server pays
/// for one `gmtime_r` a second rather than one a line.
package enum Timestamp {
    private static let cache = Mutex<(second: Int, prefix: [UInt8])>((-1, []))

    /// Now, as text.
    package static func now() -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        appendNow(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends now's timestamp to `bytes`.
    package static func appendNow(to bytes: inout [UInt8]) {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        let second = Int(spec.tv_sec)
        let prefix = cache.withLock { cached -> [UInt8] in
            if cached.second != second { cached = (second, format(second)) }
            return cached.prefix
        }
        bytes.append(contentsOf: prefix)
        let millis = Int(spec.tv_nsec / 1_000_000)
        bytes.append(UInt8(48 + millis / 100))
        bytes.append(UInt8(48 + millis / 10 % 10))
        bytes.append(UInt8(48 + millis % 10))
        bytes.append(UInt8(ascii: "Z"))
    }

    /// `YYYY-MM-DDTHH:MM:SS.` for a Unix second.
    private static func format(_ second: Int) -> [UInt8] {
        var seconds = time_t(second)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        var bytes: [UInt8] = []
        func two(_ value: Int32) {
            bytes.append(UInt8(48 + value / 10 % 10))
            bytes.append(UInt8(48 + value % 10))
        }
        let year = parts.tm_year + 1900
        two(year / 100)
        two(year % 100)
        bytes.append(UInt8(ascii: "-"))
        two(parts.tm_mon + 1)
        bytes.append(UInt8(ascii: "-"))
        two(parts.tm_mday)
        bytes.append(UInt8(ascii: "T"))
        two(parts.tm_hour)
        bytes.append(UInt8(ascii: ":"))
        two(parts.tm_min)
        bytes.append(UInt8(ascii: ":"))
        two(parts.tm_sec)
        bytes.append(UInt8(ascii: "."))
        return bytes
    }
}
