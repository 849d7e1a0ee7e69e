// Jest setupFiles entry of the integration project: fails early and clearly when the stack is missing.
import { stack } from './stack';

stack();
