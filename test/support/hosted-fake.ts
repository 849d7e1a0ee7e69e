import type http from 'node:http';
import { openAiStream, type Reply } from './llm-fake';

/**
 * Routes of the hosted providers catalog entries use, for `startLlmFake`'s fallback: fal's queue
 * API under `/fal`, Replicate's predictions under `/replicate`, an OpenAI-compatible chat API
 * under `/openai/v1`, and result files under `/files` (the providers' CDN). Each job's answer is
 * what `answers` gives for the fal app or Replicate model; the paths and bodies are the
 * providers' real ones.
 */
export interface HostedAnswers {
  /** fal: the result JSON of `app`, given the submitted input. */
  fal(app: string, input: Record<string, unknown>, files: string): unknown;
  /** Replicate: the prediction's `output` and `metrics`. */
  replicate(model: string, input: Record<string, unknown>, files: string): { output: unknown; metrics?: Record<string, number> };
  /** Result files by name, with their media type. */
  files: Record<string, { type: string; bytes: Buffer }>;
}

function json(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

export function hostedRoutes(base: () => string, answers: HostedAnswers): Reply {
  const falResults = new Map<string, unknown>();
  let next = 0;
  return async (res, req) => {
    const url = base();
    const path = req.path;
    if (path.startsWith('/files/')) {
      const file = answers.files[path.slice('/files/'.length)];
      if (!file) return json(res, 404, { detail: 'Not Found' });
      res.writeHead(200, { 'content-type': file.type });
      res.end(file.bytes);
      return;
    }
    if (path.startsWith('/openai/v1/chat/completions')) return openAiStream(['Hello', ' there'], { prompt: 120, completion: 30 })(res, req);
    if (path.startsWith('/fal/')) {
      const status = /^\/fal\/requests\/([^/]+)\/status$/.exec(path);
      if (req.method === 'GET' && status) return json(res, 200, { status: 'COMPLETED', logs: null });
      const result = /^\/fal\/requests\/([^/]+)$/.exec(path);
      if (req.method === 'GET' && result) return json(res, 200, falResults.get(result[1]!) ?? {});
      if (req.method === 'PUT') return json(res, 202, { status: 'CANCELLATION_REQUESTED' });
      const app = path.slice('/fal/'.length);
      const id = `req-${(next += 1)}`;
      falResults.set(id, answers.fal(app, req.body, `${url}/files`));
      return json(res, 200, { request_id: id, status_url: `${url}/fal/requests/${id}/status`, response_url: `${url}/fal/requests/${id}`, cancel_url: `${url}/fal/requests/${id}/cancel`, queue_position: 0 });
    }
    if (path.startsWith('/replicate/v1/')) {
      const byModel = /^\/replicate\/v1\/models\/([^/]+\/[^/]+)\/predictions$/.exec(path);
      const model = byModel ? byModel[1]! : `version:${String(req.body.version)}`;
      const input = (req.body.input ?? {}) as Record<string, unknown>;
      const { output, metrics } = answers.replicate(model, input, `${url}/files`);
      const id = `pred-${(next += 1)}`;
      // Answered within `Prefer: wait`: the prediction has already succeeded.
      return json(res, 201, { id, model, status: 'succeeded', input, output, error: null, metrics: metrics ?? {}, urls: { get: `${url}/replicate/v1/predictions/${id}`, cancel: `${url}/replicate/v1/predictions/${id}/cancel` } });
    }
    json(res, 404, { error: { message: `no route ${req.method} ${path}`, type: 'invalid_request_error' } });
  };
}
