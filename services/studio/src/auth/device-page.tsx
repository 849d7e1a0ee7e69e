/** Placeholder: the device approval page (`svc login`'s verification page). */
export function DevicePage() {
  return <main className="page"><h1>Approve a device</h1></main>;
}
