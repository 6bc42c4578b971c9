import HomeportWire
import Synchronization

/// The devices each server registered, as far as this process knows them, so a push's device is
/// found without a database read. What it holds of a server is labelled with the server's count
/// of device changes (`devices_version`, raised by every write of `gateway_devices`, whatever
/// makes it, on any replica) at which it was true; it answers only a lookup made at that same
/// count, which the request reads with its credential. It only ever says that a device is
/// registered, never that one is not: what it does not hold is looked up in the database.
///
/// It learns a server's devices from the changes this process records (``apply(server:from:to:registered:removed:)``)
/// and from what the database answered a lookup (``learn(server:at:_:)``). It holds at most
/// ``capacity`` devices in all; past that, the servers looked up longest ago are let go.
final class GatewayDeviceCache: Sendable {
    /// The most devices it holds, over every server (0: none, every lookup reads the database).
    let capacity: Int

    private struct Known {
        /// The server's count of device changes at which ``apns`` and ``others`` are true.
        var version: Int64
        /// APNs devices, by token: most of a server's, kept small.
        var apns: [String: PushEnvironment] = [:]
        /// FCM and Web Push devices, by the server's name for them.
        var others: [String: GatewayDevice] = [:]
        /// When it was last looked up, in lookups of this cache.
        var used: Int = 0
        var count: Int { apns.count + others.count }

        func device(_ token: String) -> GatewayDevice? {
            if let environment = apns[token] {
                return GatewayDevice(token: token, provider: .apns, environment: environment)
            }
            return others[token]
        }

        mutating func insert(_ device: GatewayDevice) {
            if device.provider == .apns {
                apns[device.token] = device.environment
                others[device.token] = nil
            } else {
                others[device.token] = device
                apns[device.token] = nil
            }
        }

        mutating func remove(_ token: String) {
            apns[token] = nil
            others[token] = nil
        }
    }

    private struct State {
        var servers: [Int64: Known] = [:]
        var total = 0
        var lookups = 0
    }

    private let state = Mutex(State())

    /// A cache of at most `capacity` devices.
    init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    /// The device registered under each of `tokens` for `server`, when this cache holds it true at
    /// `version` (the server's count of device changes, as the request read it); `nil` for the
    /// rest, which the caller looks up in the database. Lookups at another count forget what
    /// it held of the server.
    func lookup(server: Int64, version: Int64, _ tokens: [String]) -> [GatewayDevice?] {
        state.withLock { state in
            state.lookups += 1
            guard var known = state.servers[server], known.version == version else {
                state.total -= state.servers[server]?.count ?? 0
                state.servers[server] = nil
                return Array(repeating: nil, count: tokens.count)
            }
            known.used = state.lookups
            state.servers[server] = known
            return tokens.map(known.device)
        }
    }

    /// Notes `devices`, read from the database after the request read `version`: kept when what
    /// this cache holds of `server` is true at that count (or it holds nothing of it), else let
    /// go. A device read after a later change is never used at `version`'s count: the next
    /// lookup reads the later count.
    func learn(server: Int64, at version: Int64, _ devices: [GatewayDevice]) {
        guard capacity > 0, !devices.isEmpty else { return }
        state.withLock { state in
            var known = state.servers[server] ?? Known(version: version)
            guard known.version == version else {
                // Another request brought it to another count meanwhile: that one stays.
                return
            }
            state.total -= known.count
            state.servers[server] = nil
            makeRoom(for: known.count + devices.count, in: &state)
            for device in devices where state.total + known.count < capacity { known.insert(device) }
            known.used = state.lookups
            state.total += known.count
            state.servers[server] = known
        }
    }

    /// Brings what it holds of `server` along a transaction that took its count of device
    /// changes from `before` to `after` (no other change between, as
    /// ``GatewayDeviceStore/beginChanges(server:)`` holds it), registering `registered` and
    /// removing `removed`; when it did not hold the server at `before`, it starts anew at
    /// `after` with what was registered.
    func apply(server: Int64, from before: Int64, to after: Int64, registered: [GatewayDevice], removed: [String]) {
        guard capacity > 0 else { return }
        state.withLock { state in
            var known = state.servers[server] ?? Known(version: before)
            state.total -= state.servers[server]?.count ?? 0
            state.servers[server] = nil
            if known.version != before { known = Known(version: before) }
            // What is registered again is let go first: a device it then has no room for never
            // stands for its older registration.
            for token in removed + registered.map(\.token) { known.remove(token) }
            makeRoom(for: known.count + registered.count, in: &state)
            for device in registered where state.total + known.count < capacity { known.insert(device) }
            known.version = after
            known.used = state.lookups
            state.total += known.count
            state.servers[server] = known
        }
    }

    /// How many devices it holds, over every server.
    var count: Int { state.withLock { $0.total } }

    /// Lets go of the servers looked up longest ago until `count` more fit (or none is left
    /// but the one taken out to be added to).
    private func makeRoom(for count: Int, in state: inout State) {
        guard state.total + count > capacity else { return }
        for (server, known) in state.servers.sorted(by: { $0.value.used < $1.value.used }) {
            state.servers[server] = nil
            state.total -= known.count
            if state.total + count <= capacity { return }
        }
    }
}
