/// How many notification streams may be open at once, by whom; 0 is no cap.
package struct StreamLimits: Sendable, Equatable {
    /// Streams one session holds at once; a newer one replaces the oldest.
    package var perSession: Int
    /// Streams one account holds at once, over all its sessions.
    package var perAccount: Int
    /// Streams one client address (an IPv6 client by its /64) holds at once, over all accounts.
    package var perClient: Int

    /// Creates caps.
    package init(perSession: Int = 2, perAccount: Int = 10, perClient: Int = 50) {
        self.perSession = perSession
        self.perAccount = perAccount
        self.perClient = perClient
    }
}

/// Who holds the open notification streams of a process, and whether one more may open: caps per
/// session, per account and per client address, so that no account and no address can take every
/// connection with streams.
///
/// A stream of a session that already holds its share replaces the session's oldest (an app that
/// reconnects before its old connection was noticed gone is not refused), and so does one of a
/// session holding any stream when the account or the address is full; otherwise, past the
/// account's or the address's cap, a new stream is refused, and those already open stay.
struct StreamCensus {
    typealias Limits = StreamLimits

    /// The answer to one more stream.
    enum Admission: Equatable {
        /// It may open; the streams listed, the session's oldest, end to make room.
        case admitted(replacing: [Int])
        /// It may not: the account's streams are at their cap.
        case accountFull
        /// It may not: the address's streams are at their cap.
        case clientFull
    }

    private struct Holder {
        var session: String
        var account: Int64
        var client: String
    }

    let limits: Limits
    private var holders: [Int: Holder] = [:]
    /// Each session's streams, oldest first.
    private var bySession: [String: [Int]] = [:]
    private var byAccount: [Int64: Int] = [:]
    private var byClient: [String: Int] = [:]

    init(limits: Limits) {
        self.limits = limits
    }

    /// Decides on stream `id` of `session` (its key hash), `account` and `client` (the address's
    /// budget key), and counts it when admitted.
    mutating func admit(_ id: Int, session: String, account: Int64, client: String) -> Admission {
        var replacing: [Int] = []
        if limits.perSession > 0, let open = bySession[session], open.count >= limits.perSession {
            replacing = Array(open.prefix(open.count - limits.perSession + 1))
        }
        var freedForAccount = replacing.count
        var freedForClient = replacing.filter { holders[$0]?.client == client }.count
        var accountFull: Bool {
            limits.perAccount > 0 && byAccount[account, default: 0] - freedForAccount >= limits.perAccount
        }
        var clientFull: Bool {
            limits.perClient > 0 && byClient[client, default: 0] - freedForClient >= limits.perClient
        }
        // Full, but the session holds a stream already (an app reconnecting before its old
        // connection was noticed gone): its oldest makes room, one on this address when the
        // address is what is full.
        if accountFull || clientFull {
            let own = (bySession[session] ?? []).filter { !replacing.contains($0) }
            if let oldest = (clientFull ? own.filter { holders[$0]?.client == client } : own).first {
                replacing.append(oldest)
                freedForAccount += 1
                if holders[oldest]?.client == client { freedForClient += 1 }
            }
        }
        if accountFull { return .accountFull }
        if clientFull { return .clientFull }
        replacing.forEach { remove($0) }
        holders[id] = Holder(session: session, account: account, client: client)
        bySession[session, default: []].append(id)
        byAccount[account, default: 0] += 1
        byClient[client, default: 0] += 1
        return .admitted(replacing: replacing)
    }

    /// Forgets stream `id` (it ended); nothing when it was forgotten already.
    mutating func remove(_ id: Int) {
        guard let holder = holders.removeValue(forKey: id) else { return }
        bySession[holder.session]?.removeAll { $0 == id }
        if bySession[holder.session]?.isEmpty == true { bySession[holder.session] = nil }
        Self.decrement(&byAccount, holder.account)
        Self.decrement(&byClient, holder.client)
    }

    /// Streams counted now.
    var count: Int { holders.count }

    private static func decrement<Key: Hashable>(_ counts: inout [Key: Int], _ key: Key) {
        let left = counts[key, default: 1] - 1
        counts[key] = left > 0 ? left : nil
    }
}
