export { addFormats as default } from './ajv-stand-in';
