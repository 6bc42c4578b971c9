import HomeportLogging

extension HTTPServer {
    private static let accessPrefix = Array(" info homeport.access: ".utf8)

    /// Writes one access-log line: `<time> info homeport.access: <client> <method> <path> <status> <bytes>B <ms>ms`.
    ///
    /// Only the method and the path (without the query string) of the request appear: never a
    /// header, a cookie or a query value. Control characters become `?` so that a client cannot
    /// forge a line, and an overlong path is cut. Built as bytes: this runs once per request.
    func logAccess(method: String, path: String, status: Int, bytes: Int, elapsed: Duration, client: String) {
        if metrics.isEnabled {
            metrics.record(
                group: responder.group(of: path), status: status,
                seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        }
        guard accessLogger.minimumLevel <= .info else { return }
        var line: [UInt8] = []
        line.reserveCapacity(96 + min(path.utf8.count, 512))
        Timestamp.appendNow(to: &line)
        line.append(contentsOf: Self.accessPrefix)
        line.append(contentsOf: client.utf8)
        line.append(UInt8(ascii: " "))
        Self.appendPrintable(method, limit: 16, to: &line)
        line.append(UInt8(ascii: " "))
        Self.appendPath(path, to: &line)
        line.append(UInt8(ascii: " "))
        Self.appendDecimal(status, to: &line)
        line.append(UInt8(ascii: " "))
        Self.appendDecimal(bytes, to: &line)
        line.append(UInt8(ascii: "B"))
        line.append(UInt8(ascii: " "))
        let micros =
            Int(elapsed.components.seconds) * 1_000_000 + Int(elapsed.components.attoseconds / 1_000_000_000_000)
        Self.appendDecimal(micros / 1000, to: &line)
        line.append(UInt8(ascii: "."))
        let fraction = micros % 1000
        line.append(UInt8(48 + fraction / 100))
        line.append(UInt8(48 + fraction / 10 % 10))
        line.append(UInt8(48 + fraction % 10))
        line.append(contentsOf: [UInt8(ascii: "m"), UInt8(ascii: "s"), 10])
        accessLogger.sink.write(bytes: line)
    }

    /// Runs of this many base64url characters in a path look like a secret (a session token or a
    /// reset key is 43), whatever route the path was meant for.
    static let secretRunLength = 32

    /// Appends the path like ``appendPrintable(_:limit:to:)`` (512 bytes at most), with every run of
    /// ``secretRunLength`` or more base64url characters written as `***`: a key pasted into a
    /// mistyped link stays out of the log even where no route masks it.
    static func appendPath(_ path: String, to line: inout [UInt8]) {
        var path = path
        path.withUTF8 { appendPath(bytes: $0, to: &line) }
    }

    private static func appendPath(bytes all: UnsafeBufferPointer<UInt8>, to line: inout [UInt8]) {
        let bytes = all.prefix(512)
        let cut = all.count > 512
        var run = 0
        func endRun(force: Bool = false) {
            if run >= secretRunLength || (force && run > 0) {
                line.removeLast(run)
                line.append(contentsOf: [UInt8(ascii: "*"), UInt8(ascii: "*"), UInt8(ascii: "*")])
            }
            run = 0
        }
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                run += 1
                line.append(byte)
            default:
                endRun()
                line.append(byte < 0x20 || byte == 0x7F ? UInt8(ascii: "?") : byte)
            }
        }
        // A run the cut ends may be the start of a secret: it is masked whatever its length.
        endRun(force: cut)
        if cut { line.append(contentsOf: [0xE2, 0x80, 0xA6]) }
    }

    /// Appends at most `limit` bytes of `text`, with control bytes as `?` and `…` when cut.
    static func appendPrintable(_ text: String, limit: Int, to line: inout [UInt8]) {
        var count = 0
        for byte in text.utf8 {
            if count == limit {
                line.append(contentsOf: [0xE2, 0x80, 0xA6])
                return
            }
            line.append(byte < 0x20 || byte == 0x7F ? UInt8(ascii: "?") : byte)
            count += 1
        }
    }

    private static func appendDecimal(_ value: Int, to line: inout [UInt8]) {
        guard value > 0 else {
            line.append(UInt8(ascii: "0"))
            return
        }
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        var rest = value
        withUnsafeMutableBytes(of: &digits) { buffer in
            while rest > 0 && count < buffer.count {
                buffer[count] = UInt8(48 + rest % 10)
                rest /= 10
                count += 1
            }
            for index in stride(from: count - 1, through: 0, by: -1) { line.append(buffer[index]) }
        }
    }
}
