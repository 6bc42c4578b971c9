/// The query of a request target, taken out before libmicrohttpd parses it.
///
/// libmicrohttpd 0.9.75 stores every query argument in the connection's memory pool, some 48
/// bytes each for as little as one byte of target (`?&&&…`). A target of a few hundred
/// arguments, far under the header limit, runs the pool dry in the middle of the request line,
/// and the connection then hangs without an answer until the idle timeout. So the server reads
/// the query itself, from the raw target, and ends the target at its `?` before libmicrohttpd
/// looks for arguments: however many there are, they cost libmicrohttpd nothing.
struct RequestTarget {
    /// The bytes after the first `?`, not yet decoded; `nil` when the target has no `?`.
    var rawQuery: [UInt8]?
    /// Whether the target holds a NUL byte, or `%00` in its path (the request is refused).
    var hasNUL = false

    /// Reads the target libmicrohttpd hands its URI callback and takes the query out of it.
    ///
    /// When the callback runs, libmicrohttpd has cut the request line in place: the target ends
    /// with the NUL that replaced the space before the version, the version is exactly
    /// `HTTP/1.d`, and a NUL replaced the end of the line. So a NUL followed by `HTTP/1.d` and a
    /// NUL ends the target, and every byte read here lies inside the request line. A NUL not
    /// followed by that is part of the target; the scan goes on past it, because libmicrohttpd
    /// looks for the `?` across the whole target.
    ///
    /// The query is taken out by ending the target right after its `?`: libmicrohttpd then finds
    /// an empty query and stores no argument.
    ///
    /// One request escapes this: a target that itself holds a NUL, `HTTP/1.d` and a NUL before
    /// its `?` looks ended there. libmicrohttpd then parses that query, and with hundreds of
    /// arguments the connection hangs until the header deadline cuts it, as a client trickling
    /// its headers would. Only a request made for it looks like this: no client sends NULs.
    static func take(from target: UnsafeMutablePointer<CChar>) -> RequestTarget {
        var result = RequestTarget()
        var questionMark: Int?
        var index = 0
        while true {
            let byte = UInt8(bitPattern: target[index])
            if byte == 0 {
                if endsLine(target + index) { break }
                result.hasNUL = true
            } else if byte == UInt8(ascii: "?") && questionMark == nil {
                questionMark = index
            } else if byte == UInt8(ascii: "%") && questionMark == nil && target[index + 1] == 0x30
                && target[index + 2] == 0x30
            {
                // `%00` in the path: libmicrohttpd decodes it into a NUL that ends the path early
                // (`mutes/chat:1%00x` would act on `chat:1`). (A `%` two bytes before the target's
                // end reads the NUL and `H` of the line's end, never past it.)
                result.hasNUL = true
            }
            index += 1
        }
        if let questionMark {
            let start = questionMark + 1
            result.rawQuery = (start..<index).map { UInt8(bitPattern: target[$0]) }
            if start < index { target[start] = 0 }
        }
        return result
    }

    /// Whether `position` (a NUL) is followed by `HTTP/1.d` and a NUL: the end of the target.
    private static func endsLine(_ position: UnsafeMutablePointer<CChar>) -> Bool {
        let version = Array("HTTP/1.".utf8)
        for (offset, expected) in version.enumerated() where UInt8(bitPattern: position[offset + 1]) != expected {
            return false
        }
        let digit = UInt8(bitPattern: position[8])
        return (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digit) && position[9] == 0
    }

    /// The arguments of a raw query as a form would send them: `name=value` pairs joined by `&`,
    /// `+` for a space, `%HH` escapes (a malformed escape stays as it is); a name without `=` has
    /// an empty value, and the last value of a repeated name wins.
    static func arguments(_ query: [UInt8]) -> [String: String] {
        var arguments: [String: String] = [:]
        for pair in query.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let equals = pair.firstIndex(of: UInt8(ascii: "="))
            let name = decode(pair[..<(equals ?? pair.endIndex)])
            let value = equals.map { decode(pair[pair.index(after: $0)...]) } ?? ""
            arguments[name] = value
        }
        return arguments
    }

    /// `+` as a space and `%HH` escapes decoded; the bytes read as UTF-8 (invalid ones replaced).
    static func decode(_ bytes: ArraySlice<UInt8>) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%"), index + 2 < bytes.endIndex,
                let high = PercentEncoding.hexValue(bytes[index + 1]),
                let low = PercentEncoding.hexValue(bytes[index + 2])
            {
                output.append(high << 4 | low)
                index += 3
                continue
            }
            output.append(byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
            index += 1
        }
        return String(decoding: output, as: UTF8.self)
    }
}
