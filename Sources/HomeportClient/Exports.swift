// The wire types the client's API speaks in (InstanceID, AppInfo, StreamNotification, …) come
// with `import HomeportClient` alone.
@_exported import HomeportWire
