import HomeportWire

/// Something the app should know about, such as a changed installation identity.
public enum ClientEvent: Sendable, Equatable {
    /// The primary answered a new `instanceId` (a clone, a fresh database, an old backup).
    /// The client adopted it and marked every alternative unverified: ask the user to verify each.
    case identityChanged(server: String, old: InstanceID, new: InstanceID, unverifiedAlternatives: [String])
    /// The server refused the credential; the account is signed out.
    case signedOut(server: String)
    /// The network path changed; verifications of other paths no longer count.
    case pathChanged(String)
    /// A sign-in replaced the session this device held for `server` (the account `email`); the
    /// client asked the server to end the old one, with this outcome.
    case sessionReplaced(server: String, email: String, outcome: SignOutOutcome)
}
