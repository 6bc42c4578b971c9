/// What became of a session when this device let go of it (a logout, or a sign-in that replaced it).
public enum SignOutOutcome: Sendable, Equatable {
    /// The server confirmed that the session is over: the app door answered, from an address that
    /// answered as the enrolled installation (or the primary of a server without an identity).
    case revoked
    /// The session was erased on this device only; the server did not confirm that it ended (it
    /// may stay valid until it expires), for the reason given.
    case notConfirmed(String)
}
