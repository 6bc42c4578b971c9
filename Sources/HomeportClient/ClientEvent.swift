import HomeportWire

/// Something the app should know about, such as a changed installation identity.
public enum ClientEvent: Sendable, Equatable {
    /// The primary of a server whose key is not pinned answered a new `instanceId` (a clone, a
    /// fresh database, an old backup). The client adopted it and marked every alternative
    /// unverified: ask the user to verify each. (A pinned server's addresses get nothing from
    /// another installation: its requests throw ``ClientError/noVerifiedAddress(server:detail:)``.)
    case identityChanged(server: String, old: InstanceID, new: InstanceID, unverifiedAlternatives: [String])
    /// The server refused the credential; the account is signed out.
    case signedOut(server: String)
    /// The network path changed; verifications of other paths no longer count.
    case pathChanged(String)
    /// A sign-in replaced the session this device held for `server` (the account `email`); the
    /// client asked the server to end the old one, with this outcome.
    case sessionReplaced(server: String, email: String, outcome: SignOutOutcome)
    /// The client registered the device's push token with `server` on its own (at sign-in), or
    /// withdrew it (before signing out or removing the server), with this outcome.
    case pushDevice(server: String, outcome: PushDeviceOutcome)
    /// `server`'s primary address moved (it redirected to `https://` on the same host, or the user
    /// gave a new one), and the new address answered as the installation: the session goes on there.
    case primaryMoved(server: String, from: String, to: String)
}

/// What became of a push registration the client made or withdrew on its own.
public enum PushDeviceOutcome: Sendable, Equatable {
    /// The server registered the token.
    case registered(PushDeviceRegistration)
    /// The server confirmed that the token is no longer registered.
    case unregistered
    /// The server could not be asked, or refused, for this reason; the sign-in stands.
    case registrationFailed(String)
    /// The server did not confirm the removal, for this reason; it was forgotten on this device
    /// all the same (a server drops the registrations of a session when the session ends).
    case unregistrationNotConfirmed(String)
}
