/// One event of a `text/event-stream`.
public struct ServerSentEvent: Sendable, Equatable {
    /// The event type (`event:`), `message` when the server named none.
    public var type: String
    /// The data lines, joined with newlines.
    public var data: String
    /// The last event id in force when the event was dispatched (`id:`; it carries over to
    /// later events that name none). Empty when the server never named one.
    public var lastEventID: String

    /// Creates an event.
    public init(type: String, data: String, lastEventID: String) {
        self.type = type
        self.data = data
        self.lastEventID = lastEventID
    }
}

/// Reads `text/event-stream` as the WHATWG HTML standard (§9.2.6) says, chunk by chunk: lines end
/// with CR, LF or CRLF (even split across chunks); a leading byte-order mark is ignored; a blank
/// line dispatches; a line starting with `:` is a comment (a heartbeat); an `id` containing NUL is
/// ignored; an event still open when the body ends is never dispatched (the caller discards it and
/// resumes after the last whole event). One event — its lines as they are read — may hold at most
/// `limit` bytes: a larger one is skipped, nothing of it kept but its `id`, and reported as
/// ``Item/overflow(limit:)`` where it ends (the resume point moves past it); the events after it
/// are read as usual.
struct ServerSentEventParser {
    /// What a chunk yielded, in order.
    enum Item: Equatable {
        /// A whole event with data.
        case event(ServerSentEvent)
        /// A comment line (`: keepalive`).
        case comment
        /// The server's reconnection time, in milliseconds.
        case retry(Int)
        /// An event over the limit ended, skipped: only its `id` was kept (the resume point after it).
        case overflow(limit: Int, lastEventID: String)
    }

    let limit: Int
    /// The id of the last dispatched event (or set by an event without data): where to resume.
    private(set) var lastEventID = ""
    private var idBuffer = ""
    private var line: [UInt8] = []
    private var data: [String] = []
    private var type = ""
    private var eventBytes = 0
    private var afterCR = false
    private var firstLine = true
    /// Inside an event over the limit: only its `id` counts until it ends.
    private var skipping = false
    /// The line the limit was passed in: discarded, whatever it holds.
    private var discardingLine = false

    init(limit: Int, lastEventID: String = "") {
        self.limit = limit
        self.lastEventID = lastEventID
        self.idBuffer = lastEventID
    }

    /// Feeds a chunk; returns what it completed, in order.
    mutating func feed(_ chunk: some Sequence<UInt8>) -> [Item] {
        var items: [Item] = []
        for byte in chunk {
            if afterCR {
                afterCR = false
                if byte == 0x0A { continue }  // the LF of a CRLF
            }
            switch byte {
            case 0x0D:
                afterCR = true
                if let item = endLine() { items.append(item) }
            case 0x0A:
                if let item = endLine() { items.append(item) }
            default:
                // While skipping, a line is kept only as long as an `id` line can be.
                if !skipping || line.count < limit { line.append(byte) }
                if !skipping { eventBytes += 1 }
            }
            if !skipping && eventBytes > limit {
                skipping = true
                discardingLine = !line.isEmpty
                line.removeAll(keepingCapacity: true)
                data.removeAll()
                type = ""
            }
        }
        return items
    }

    private mutating func endLine() -> Item? {
        var bytes = line[...]
        let length = line.count
        line.removeAll(keepingCapacity: true)
        if discardingLine {
            discardingLine = false
            return nil
        }
        if firstLine {
            firstLine = false
            if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        }
        if bytes.isEmpty { return dispatch() }
        if skipping {
            // Of a skipped event, only the id counts: the resume point must move past it.
            let text = String(decoding: bytes, as: UTF8.self)
            if text.hasPrefix("id:") {
                var value = text.dropFirst(3)
                if value.first == " " { value = value.dropFirst() }
                if !value.contains("\u{0}") { idBuffer = String(value) }
            }
            return nil
        }
        if bytes.first == UInt8(ascii: ":") {
            // A heartbeat is not part of an event: it never adds up towards the limit.
            eventBytes -= length
            return .comment
        }
        eventBytes += 1
        let text = String(decoding: bytes, as: UTF8.self)
        let field: Substring
        var value: Substring
        if let colon = text.firstIndex(of: ":") {
            field = text[..<colon]
            value = text[text.index(after: colon)...]
            if value.first == " " { value = value.dropFirst() }
        } else {
            field = text[...]
            value = ""
        }
        switch field {
        case "event": type = String(value)
        case "data": data.append(String(value))
        case "id" where !value.contains("\u{0}"): idBuffer = String(value)
        case "retry" where !value.isEmpty && value.allSatisfy({ $0.isASCII && $0.isNumber }):
            return Int(value).map { .retry($0) }
        default: break
        }
        return nil
    }

    private mutating func dispatch() -> Item? {
        defer {
            data.removeAll()
            type = ""
            eventBytes = 0
        }
        lastEventID = idBuffer
        if skipping {
            skipping = false
            return .overflow(limit: limit, lastEventID: lastEventID)
        }
        guard !data.isEmpty else { return nil }
        return .event(
            ServerSentEvent(
                type: type.isEmpty ? "message" : type, data: data.joined(separator: "\n"), lastEventID: lastEventID))
    }
}
