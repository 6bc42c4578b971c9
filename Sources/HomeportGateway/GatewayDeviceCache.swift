import HomeportWire
import Synchronization

/// The devices each server registered, as far as this process knows them, so a push's device is
/// found without a database read. What it holds of a server is labelled with the server's mark
/// (`devices_version`: a random number drawn anew by every write of its devices, whatever makes
/// it, on any replica) at which it was true, and it answers only a lookup made at that same
/// mark, which the request reads with its credential: what it says is as of the request's
/// authentication, as a database read at that moment would say. It only ever says that a device
/// is registered, never that one is not: what it does not hold is looked up in the database.
///
/// It learns a server's devices from the changes this process records
/// (``apply(server:from:to:registered:removed:)``) and from what the database answered a lookup
/// (``learn(server:at:_:)``). It holds at most ``capacity`` bytes of them, by an estimate of
/// each device's memory (an APNs device about 170 bytes, a Web Push or FCM device more, with its
/// address), and at most half of that for one server, so one server never takes it all from
/// the others; past that, the servers looked up longest ago are let go.
final class GatewayDeviceCache: Sendable {
    /// The most bytes it holds, over every server (0: none, every lookup reads the database).
    let capacity: Int

    private struct Known {
        /// The server's mark at which ``apns`` and ``others`` are true.
        var version: Int64
        /// APNs devices, by token: most of a server's, kept small.
        var apns: [String: PushEnvironment] = [:]
        /// FCM and Web Push devices, by the server's name for them.
        var others: [String: GatewayDevice] = [:]
        /// The estimate of what they hold.
        var bytes = 0
        /// When it was last looked up, in lookups of this cache.
        var used = 0
        var count: Int { apns.count + others.count }

        func device(_ token: String) -> GatewayDevice? {
            if let environment = apns[token] {
                return GatewayDevice(token: token, provider: .apns, environment: environment)
            }
            return others[token]
        }

        mutating func insert(_ device: GatewayDevice) {
            remove(device.token)
            if device.provider == .apns {
                apns[device.token] = device.environment
            } else {
                others[device.token] = device
            }
            bytes += GatewayDeviceCache.bytes(of: device)
        }

        mutating func remove(_ token: String) {
            if apns.removeValue(forKey: token) != nil {
                bytes -= GatewayDeviceCache.bytes(ofAPNs: token)
            } else if let device = others.removeValue(forKey: token) {
                bytes -= GatewayDeviceCache.bytes(of: device)
            }
        }
    }

    private struct State {
        var servers: [Int64: Known] = [:]
        /// The bytes every server's devices hold.
        var total = 0
        var lookups = 0
    }

    private let state = Mutex(State())

    /// A cache of at most `capacity` bytes.
    init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    /// The estimate of the memory `device` holds here: its strings, and a table's slot.
    static func bytes(of device: GatewayDevice) -> Int {
        guard device.provider != .apns else { return bytes(ofAPNs: device.token) }
        return 160 + device.token.utf8.count + (device.endpoint?.utf8.count ?? 0) + (device.p256dh?.utf8.count ?? 0)
            + (device.auth?.utf8.count ?? 0)
    }

    /// The estimate for an APNs device (its token, its environment and a table's slot).
    private static func bytes(ofAPNs token: String) -> Int { 104 + token.utf8.count }

    /// The device registered under each of `tokens` for `server`, when this cache holds it true at
    /// `version` (the server's mark, as the request read it); `nil` for the rest, which the
    /// caller looks up in the database. A lookup at another mark lets go of what it held of
    /// the server.
    func lookup(server: Int64, version: Int64, _ tokens: [String]) -> [GatewayDevice?] {
        state.withLock { state in
            state.lookups += 1
            guard var known = state.servers[server], known.version == version else {
                take(server, in: &state)
                return Array(repeating: nil, count: tokens.count)
            }
            known.used = state.lookups
            state.servers[server] = known
            return tokens.map(known.device)
        }
    }

    /// Notes `devices`, read from the database after the request read `version`: kept when what
    /// this cache holds of `server` is true at that mark (or it holds nothing of it). A device
    /// read after a later change is never used at `version`: the next lookup reads the later mark.
    func learn(server: Int64, at version: Int64, _ devices: [GatewayDevice]) {
        guard capacity > 0, !devices.isEmpty else { return }
        state.withLock { state in
            // Another request brought it to another mark meanwhile: that one stays.
            if let held = state.servers[server], held.version != version { return }
            var known = take(server, in: &state) ?? Known(version: version)
            store(devices, in: &known, state: &state)
            put(server, known, in: &state)
        }
    }

    /// Brings what it holds of `server` along a transaction that took its mark from `before` to
    /// `after` (no other change between, as ``GatewayDeviceStore/change(server:_:)`` holds
    /// it), removing `removed` and then registering `registered`; when it did not hold the
    /// server at `before`, it starts anew at `after` with what was registered.
    func apply(server: Int64, from before: Int64, to after: Int64, registered: [GatewayDevice], removed: [String]) {
        guard capacity > 0 else { return }
        state.withLock { state in
            var known = take(server, in: &state) ?? Known(version: before)
            if known.version != before { known = Known(version: before) }
            // What is registered again is let go first: a device it then has no room for never
            // stands for its older registration.
            for token in removed + registered.map(\.token) { known.remove(token) }
            store(registered, in: &known, state: &state)
            known.version = after
            put(server, known, in: &state)
        }
    }

    /// How many devices it holds, over every server.
    var count: Int { state.withLock { $0.servers.values.reduce(0) { $0 + $1.count } } }

    /// The estimate of the bytes it holds, over every server.
    var bytes: Int { state.withLock { $0.total } }

    /// Takes `server` out of `state` (its bytes with it), to be changed or let go; what it held.
    @discardableResult
    private func take(_ server: Int64, in state: inout State) -> Known? {
        guard let held = state.servers.removeValue(forKey: server) else { return nil }
        state.total -= held.bytes
        return held
    }

    /// Puts `server` back, as just used.
    private func put(_ server: Int64, _ known: Known, in state: inout State) {
        var known = known
        known.used = state.lookups
        state.total += known.bytes
        state.servers[server] = known
    }

    /// Adds `devices` to `known` (taken out of `state`), as many as its share and the room left
    /// after letting go of the servers looked up longest ago allow. A device it has no room for
    /// is let go of, so an earlier copy of its token (named twice) never stands for it.
    private func store(_ devices: [GatewayDevice], in known: inout Known, state: inout State) {
        let share = capacity / 2
        let wanted = min(share, known.bytes + devices.reduce(0) { $0 + Self.bytes(of: $1) })
        makeRoom(for: wanted, in: &state)
        for device in devices {
            let bytes = Self.bytes(of: device)
            if known.bytes + bytes <= share, state.total + known.bytes + bytes <= capacity {
                known.insert(device)
            } else {
                known.remove(device.token)
            }
        }
    }

    /// Lets go of the servers looked up longest ago until `bytes` more fit (or none is left but
    /// the one taken out to be changed).
    private func makeRoom(for bytes: Int, in state: inout State) {
        guard state.total + bytes > capacity else { return }
        for (server, known) in state.servers.sorted(by: { $0.value.used < $1.value.used }) {
            state.servers[server] = nil
            state.total -= known.bytes
            if state.total + bytes <= capacity { return }
        }
    }
}
