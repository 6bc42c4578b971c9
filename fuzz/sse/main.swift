// The in-app notification stream as the client reads it: ServerSentEventParser over
// `text/event-stream` bytes, and each event's data as a StreamNotification. See fuzz/README.md.
import Foundation
import HomeportWire

/// One input: the bytes are a stream's body.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    for limit in [1 << 16, 64] {
        let (whole, lastEventID) = parse(bytes, limit: limit, chunks: [bytes.count])
        checkItems(whole, limit: limit)
        let halves = [bytes.count / 2, bytes.count - bytes.count / 2]
        let oneByOne = [Int](repeating: 1, count: bytes.count)
        for chunks in [halves, oneByOne] {
            let (items, id) = parse(bytes, limit: limit, chunks: chunks)
            require(items == whole && id == lastEventID, "chunks \(chunks.prefix(4)) read \(items), not \(whole)")
        }
        for case .event(let event) in whole {
            roundTrip(StreamNotification.self, Data(event.data.utf8))
        }
    }
    return 0
}

/// What a parser makes of `bytes` fed in chunks of the given sizes, and where it would resume.
func parse(_ bytes: [UInt8], limit: Int, chunks: [Int]) -> ([ServerSentEventParser.Item], String) {
    var parser = ServerSentEventParser(limit: limit, lastEventID: "7")
    var items: [ServerSentEventParser.Item] = []
    var start = 0
    for count in chunks {
        items += parser.feed(bytes[start..<start + count])
        start += count
    }
    return (items, parser.lastEventID)
}

/// An overflow names the limit; no field holds a line break, and no id a NUL.
func checkItems(_ items: [ServerSentEventParser.Item], limit: Int) {
    for (index, item) in items.enumerated() {
        switch item {
        case .overflow(let reported, let id):
            require(reported == limit, "overflow(\(reported)) names another limit than \(limit)")
            require(
                !id.unicodeScalars.contains { $0 == "\r" || $0 == "\n" || $0 == "\0" },
                "a skipped id \(id.debugDescription)")
        case .event(let event):
            require(!event.type.isEmpty, "an event without a type")
            for text in [event.type, event.lastEventID] {
                require(
                    !text.unicodeScalars.contains { $0 == "\r" || $0 == "\n" },
                    "a line break in \(text.debugDescription)")
            }
            require(!event.data.unicodeScalars.contains("\r"), "a CR in data \(event.data.debugDescription)")
            require(
                !event.lastEventID.unicodeScalars.contains("\0"),
                "a NUL in the id \(event.lastEventID.debugDescription)")
            // Each byte read makes at most one scalar (an invalid one becomes U+FFFD).
            let scalars = event.data.unicodeScalars.count
            require(scalars <= limit, "an event of \(scalars) scalars from at most \(limit) bytes")
        case .retry(let milliseconds):
            require(milliseconds >= 0, "retry \(milliseconds)")
        case .comment:
            break
        }
    }
}
