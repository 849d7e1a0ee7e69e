import type { Connection as FlowConnection, Edge as FlowEdge, FinalConnectionState, IsValidConnection } from '@xyflow/react';
import { useCallback, useRef } from 'react';
import type { StoreApi } from 'zustand/vanilla';
import { parseHandle, toConnection } from './flow';
import { connect, connectionProblem, disconnect, type Catalog, type Graph } from './model';
import type { EditorState } from './store';

export interface ConnectionDeps {
  store: StoreApi<EditorState>;
  catalog: Catalog;
  apply(change: (g: Graph) => Graph): void;
  showToast(text: string): void;
}

/**
 * The canvas's connection handlers: a connection is allowed only where the model allows it (and a
 * refused one says why); dragging an edge's end onto another input moves it, into empty space
 * removes it.
 */
export function useConnections({ store, catalog, apply, showToast }: ConnectionDeps) {
  const isValidConnection = useCallback<IsValidConnection>((c) => {
    const conn = toConnection(c);
    return conn !== null && connectionProblem(store.getState().graph, catalog, conn) === null;
  }, [catalog, store]);

  const onConnect = useCallback((c: FlowConnection) => {
    const conn = toConnection(c);
    if (!conn) return;
    const problem = connectionProblem(store.getState().graph, catalog, conn);
    if (problem) {
      showToast(problem);
      return;
    }
    apply((g) => connect(g, conn));
  }, [apply, catalog, showToast, store]);

  // Dragging an edge's end: onto another input moves the connection, into empty space removes it.
  const reconnected = useRef(true);
  const onReconnectStart = useCallback(() => {
    reconnected.current = false;
  }, []);
  const onReconnect = useCallback((old: FlowEdge, c: FlowConnection) => {
    reconnected.current = true;
    const conn = toConnection(c);
    const oldPort = parseHandle(old.targetHandle, 'in');
    if (!conn || !oldPort) return;
    const without = disconnect(store.getState().graph, old.target, oldPort);
    const problem = connectionProblem(without, catalog, conn);
    if (problem) {
      showToast(problem);
      return;
    }
    apply((g) => connect(disconnect(g, old.target, oldPort), conn));
  }, [apply, catalog, showToast, store]);
  const onReconnectEnd = useCallback((_: MouseEvent | TouchEvent, old: FlowEdge) => {
    if (!reconnected.current) {
      const oldPort = parseHandle(old.targetHandle, 'in');
      if (oldPort) apply((g) => disconnect(g, old.target, oldPort));
    }
    reconnected.current = true;
  }, [apply]);

  const onConnectEnd = useCallback((_: MouseEvent | TouchEvent, state: FinalConnectionState) => {
    if (state.isValid || !state.fromHandle || !state.toHandle) return;
    const from = state.fromHandle;
    const to = state.toHandle;
    const source = from.type === 'source' ? from : to;
    const target = from.type === 'source' ? to : from;
    if (source.type !== 'source' || target.type !== 'target') {
      showToast(`Connect an output (right side) to an input (left side).`);
      return;
    }
    const conn = toConnection({ source: source.nodeId, sourceHandle: source.id, target: target.nodeId, targetHandle: target.id });
    const problem = conn ? connectionProblem(store.getState().graph, catalog, conn) : null;
    if (problem) showToast(problem);
  }, [catalog, showToast, store]);

  return { isValidConnection, onConnect, onReconnectStart, onReconnect, onReconnectEnd, onConnectEnd };
}
