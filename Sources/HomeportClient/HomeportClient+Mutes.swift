import Foundation
import HomeportWire

extension HomeportClient {
    /// The threads the account muted on `server` (`GET /api/v1/notifications/mutes`), as that
    /// server names them (`chat:42`). Muting is per server, because the conversation is.
    public func mutedThreads(_ server: some ServerReference) async throws -> [String] {
        let answer = try await send("GET", HomeportPath.notificationsMutes, to: server)
        guard answer.response.status == 200 else { throw Self.refusal(answer) }
        guard answer.response.isJSON,
            let muted = try? JSONDecoder().decode(MutedThreads.self, from: answer.response.body)
        else { throw ClientError.badAnswer(address: answer.via.url, detail: "mutes answered \(answer.response.kind)") }
        return muted.threads.map { ServerText.clean($0) }
    }

    /// Mutes `thread` on `server` (`PUT /api/v1/notifications/mutes/{thread}`). Returns the thread
    /// as the server names it.
    @discardableResult
    public func mute(_ thread: String, on server: some ServerReference) async throws -> String {
        try await setMuted(true, thread, on: server)
    }

    /// Unmutes `thread` on `server` (`DELETE /api/v1/notifications/mutes/{thread}`). Returns the
    /// thread as the server names it.
    @discardableResult
    public func unmute(_ thread: String, on server: some ServerReference) async throws -> String {
        try await setMuted(false, thread, on: server)
    }

    private func setMuted(_ muted: Bool, _ thread: String, on server: some ServerReference) async throws -> String {
        let record = try server.record(in: directory)
        let local = try Self.serverThread(thread, of: record)
        let answer = try await send(
            muted ? "PUT" : "DELETE", HomeportPath.notificationsMute(local), to: record.key)
        guard [200, 204].contains(answer.response.status) else { throw Self.refusal(answer) }
        return local
    }

    /// The server's own name of `thread`: a thread id namespaced with this server's id
    /// (`<instanceId>:chat:42`, as a push carries it) loses the prefix; one namespaced with
    /// another installation's id is refused, and so is anything that is not a thread name.
    static func serverThread(_ thread: String, of record: ServerRecord) throws -> String {
        let shown = ServerText.clean(thread, limit: 140)
        switch ThreadName.local(thread, of: record) {
        case .own(let local): return local
        case .otherServer(let other):
            throw ClientError.invalidInput("\(shown) is a thread of another server (\(other)), not of \(record.key)")
        case .invalid:
            throw ClientError.invalidInput(
                "'\(shown)' is not a thread name: 1 to 128 characters of A-Z a-z 0-9 : . _ -")
        }
    }
}
