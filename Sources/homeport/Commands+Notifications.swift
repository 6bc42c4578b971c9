import Foundation
import HomeportClient
import HomeportCommandLine
import HomeportWire

extension Commands {
    static let watchSpec = CommandSpec(
        name: "homeport notifications watch",
        summary: "Print SERVER's notifications as they come (the in-app stream), reconnecting as needed.",
        arguments: [serverArgument],
        options: [
            .value("last-event-id", "ID", help: "Resume after this event id (otherwise: new notifications only)."),
            .value("count", "N", help: "Stop after N notifications."),
            .flag("json", help: "Print one JSON object a line: {server, eventId, notification}."),
            proxyOption, caFileOption,
        ],
        discussion: """
            Every connection goes through the address race with the session token header only. After a drop,
            an idle spell (no heartbeat for 45 s), a network change or a server restart, it reconnects through
            a fresh race with Last-Event-ID, so nothing is lost or printed twice; what happened is said on
            standard error. It stops, with the usual exit codes, when the server signs the account out (4) or
            answers with something that is not the stream (3).
            """)

    static func notifications(_ action: String, _ arguments: [String], _ environment: [String: String]) async throws
        -> Int32
    {
        guard action == "watch" else { throw UsageError("unknown notifications action '\(action)'; use watch") }
        guard let parsed = try parse(watchSpec, arguments) else { return 0 }
        var limit: Int?
        if let text = parsed.options["count"] {
            guard let count = Int(text), count > 0 else { throw UsageError("--count needs a positive number") }
            limit = count
        }
        let client = try client(environment, parsed)
        let record = try client.directory.find(parsed.positionals[0])
        let json = parsed.flag("json")
        var printed = 0
        for try await event in client.notificationStream(record.key, resumingAfter: parsed.options["last-event-id"]) {
            switch event {
            case .connected(let via, let after):
                warn(
                    "homeport: watching \(record.displayName) via \(via)"
                        + (after.map { ", resuming after event \($0)" } ?? "")
                )
            case .disconnected(let reason, let wait):
                warn("homeport: disconnected: \(reason); reconnecting in \(Self.seconds(wait))")
            case .discarded(let id, let reason):
                warn("homeport: event \(id) not shown: \(reason)")
            case .notification(let notification):
                if json {
                    try printLine(notification, server: record.key)
                } else {
                    say(Self.describe(notification))
                }
                printed += 1
                if let limit, printed >= limit { return 0 }
            }
        }
        return 0
    }

    /// One line for a person: id, time, title, body, code, thread.
    static func describe(_ notification: StreamNotification) -> String {
        let time = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: TimeInterval(notification.at)))
        var line = "\(notification.id)  \(time)  \(notification.title)"
        if let body = notification.body { line += " — \(body)" }
        line += "  [\(notification.c)]"
        if let thread = notification.thread { line += "  thread \(thread)" }
        return line
    }

    /// One compact JSON line.
    static func printLine(_ notification: StreamNotification, server: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let object = try JSONSerialization.jsonObject(with: try encoder.encode(notification))
        say(
            try Output.json(
                ["server": server, "eventId": notification.id, "notification": object] as [String: Any], compact: true))
    }

    static func seconds(_ duration: Duration) -> String {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        return String(format: "%.1f s", seconds)
    }
}
